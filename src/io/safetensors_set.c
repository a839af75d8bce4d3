/*
 * safetensors_set.c - sharded safetensors sets (strix/safetensors.h): the index file of
 * transformers' sharded checkpoints, model.safetensors.index.json = {"metadata": {...},
 * "weight_map": {"<tensor>": "<shard file>"}}, with its shards opened through the reader, checked
 * against each other, and one sorted name table for lookups across shards.
 *
 * Does not write sets and does not look at the index's "total_size" (the shards' own validation
 * covers their sizes).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "st_internal.h"

/* One name of the set: from the index (file = shard index) or from a shard (t set). */
typedef struct set_item {
    const char *name;
    int shard;
    const strix_st_tensor *t;
} set_item;

struct strix_st_set {
    int shard_count;
    strix_safetensors **shards;
    char **shard_names;
    int count;
    set_item *items;           /* every shard tensor, by name */
    int meta_count;
    char **meta_keys, **meta_values;
};

/* By name, then by shard (so the first of two shards holding a name comes first). */
static int compare_items(const void *a, const void *b) {
    const set_item *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->shard > y->shard) - (x->shard < y->shard);
}

static int compare_names(const void *a, const void *b) {
    return strcmp(((const set_item *)a)->name, ((const set_item *)b)->name);
}

static char *dup_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* A shard file name the index may use: non-empty, relative, without a ".." part. */
static bool plain_relative(const char *name) {
    if (!name[0] || name[0] == '/') return false;
    for (const char *p = name; *p;) {
        size_t len = strcspn(p, "/");
        if (len == 2 && p[0] == '.' && p[1] == '.') return false;
        p += len;
        if (*p == '/') p++;
    }
    return true;
}

/* The index file's text (NUL-terminated, malloc'ed). */
static strix_status read_index(const char *path, char **text) {
    *text = NULL;
    int fd;
    uint64_t size;
    strix_status s = st_open_regular(path, &fd, &size);
    if (s != STRIX_OK) return s;
    if (size > ST_HEADER_MAX) {
        close(fd);
        return strix_error(STRIX_ERR_FORMAT, "index '%s' is over the 100 MB limit", path);
    }
    unsigned char *buf = NULL;
    s = st_read_whole(fd, path, (size_t)size, &buf);
    close(fd);
    if (s != STRIX_OK) {
        free(buf);
        return s;
    }
    buf[size] = '\0';
    *text = (char *)buf;
    return STRIX_OK;
}

/* The metadata object's values as text. */
static strix_status read_meta(const cJSON *meta, const char *path, strix_st_set *set) {
    if (!meta) return STRIX_OK;
    if (!cJSON_IsObject(meta))
        return strix_error(STRIX_ERR_FORMAT, "index '%s': \"metadata\" is not an object", path);
    int m = cJSON_GetArraySize(meta);
    set->meta_keys = calloc((size_t)(m ? m : 1), sizeof *set->meta_keys);
    set->meta_values = calloc((size_t)(m ? m : 1), sizeof *set->meta_values);
    if (!set->meta_keys || !set->meta_values)
        return strix_error(STRIX_ERR_ALLOC, "index: out of memory");
    for (const cJSON *e = meta->child; e; e = e->next) {
        char *key = dup_string(e->string);
        char *value = cJSON_IsString(e) ? dup_string(e->valuestring) : cJSON_PrintUnformatted(e);
        set->meta_keys[set->meta_count] = key;
        set->meta_values[set->meta_count] = value;
        set->meta_count++;
        if (!key || !value) return strix_error(STRIX_ERR_ALLOC, "index: out of memory");
    }
    return STRIX_OK;
}

/* The index of shard `file` in set->shard_names, added if new; -1 on out-of-memory. */
static int shard_of(strix_st_set *set, const char *file, int cap) {
    for (int i = 0; i < set->shard_count; i++)
        if (strcmp(set->shard_names[i], file) == 0) return i;
    STRIX_ASSERT(set->shard_count < cap, "index: shard table full");
    char *copy = dup_string(file);
    if (!copy) return -1;
    set->shard_names[set->shard_count] = copy;
    return set->shard_count++;
}

/* Opens the shards named in set->shard_names, next to the index. */
static strix_status open_shards(strix_st_set *set, const char *path,
                                const strix_st_read_options *opt) {
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    for (int i = 0; i < set->shard_count; i++) {
        char file[STRIX_PATH_MAX];
        if (dir_len + strlen(set->shard_names[i]) >= sizeof file)
            return strix_error(STRIX_ERR_FORMAT, "index '%s': shard path too long", path);
        memcpy(file, path, dir_len);
        strcpy(file + dir_len, set->shard_names[i]);
        strix_status s = strix_safetensors_read_ex(file, opt, &set->shards[i]);
        if (s != STRIX_OK) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", strix_last_error());
            return strix_error(s, "index '%s': shard '%s': %s", path, set->shard_names[i], msg);
        }
    }
    return STRIX_OK;
}

/* Every shard tensor into set->items, sorted by name; a name in two shards is an error. */
static strix_status gather(strix_st_set *set, const char *path) {
    int total = 0;
    for (int i = 0; i < set->shard_count; i++) total += strix_safetensors_count(set->shards[i]);
    set->items = calloc((size_t)(total ? total : 1), sizeof *set->items);
    if (!set->items) return strix_error(STRIX_ERR_ALLOC, "index: out of memory");
    for (int i = 0; i < set->shard_count; i++)
        for (int k = 0; k < strix_safetensors_count(set->shards[i]); k++) {
            const strix_st_tensor *t = strix_safetensors_at(set->shards[i], k);
            set->items[set->count++] = (set_item){.name = t->name, .shard = i, .t = t};
        }
    qsort(set->items, (size_t)set->count, sizeof *set->items, compare_items);
    for (int i = 1; i < set->count; i++)
        if (strcmp(set->items[i - 1].name, set->items[i].name) == 0)
            return strix_error(STRIX_ERR_FORMAT, "index '%s': tensor '%s' is in both shard '%s' "
                               "and shard '%s'", path, set->items[i].name,
                               set->shard_names[set->items[i - 1].shard],
                               set->shard_names[set->items[i].shard]);
    return STRIX_OK;
}

/* The index's names (map[0..n), sorted, distinct) against the shards' (set->items). */
static strix_status match(const strix_st_set *set, const set_item *map, int n, const char *path) {
    int i = 0, j = 0;
    while (i < n || j < set->count) {
        int c = i < n && j < set->count ? strcmp(map[i].name, set->items[j].name)
                                        : (i < n ? -1 : 1);
        if (c < 0)
            return strix_error(STRIX_ERR_FORMAT, "index '%s' maps tensor '%s' to shard '%s', "
                               "which does not hold it", path, map[i].name,
                               set->shard_names[map[i].shard]);
        if (c > 0)
            return strix_error(STRIX_ERR_FORMAT, "index '%s': shard '%s' holds tensor '%s', "
                               "which the index does not list", path,
                               set->shard_names[set->items[j].shard], set->items[j].name);
        if (map[i].shard != set->items[j].shard)
            return strix_error(STRIX_ERR_FORMAT, "index '%s' maps tensor '%s' to shard '%s', "
                               "which does not hold it (shard '%s' does)", path, map[i].name,
                               set->shard_names[map[i].shard],
                               set->shard_names[set->items[j].shard]);
        i++, j++;
    }
    return STRIX_OK;
}

/* Everything after reading the index text. */
static strix_status open_set(const cJSON *root, const char *path,
                             const strix_st_read_options *opt, strix_st_set *set) {
    if (!cJSON_IsObject(root))
        return strix_error(STRIX_ERR_FORMAT, "index '%s' is not a JSON object", path);
    const cJSON *weights = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(weights))
        return strix_error(STRIX_ERR_FORMAT, "index '%s' has no \"weight_map\" object", path);
    STRIX_TRY(read_meta(cJSON_GetObjectItemCaseSensitive(root, "metadata"), path, set));

    int n = cJSON_GetArraySize(weights);
    set_item *map = calloc((size_t)(n ? n : 1), sizeof *map);
    set->shard_names = calloc((size_t)(n ? n : 1), sizeof *set->shard_names);
    set->shards = calloc((size_t)(n ? n : 1), sizeof *set->shards);
    strix_status s = map && set->shard_names && set->shards
                         ? STRIX_OK : strix_error(STRIX_ERR_ALLOC, "index: out of memory");
    int k = 0;
    for (const cJSON *e = weights->child; e && s == STRIX_OK; e = e->next, k++) {
        if (!cJSON_IsString(e) || !plain_relative(e->valuestring)) {
            s = strix_error(STRIX_ERR_FORMAT, "index '%s': tensor '%s' is mapped to no plain "
                            "relative file name", path, e->string);
            break;
        }
        map[k].name = e->string;
        map[k].shard = shard_of(set, e->valuestring, n);
        if (map[k].shard < 0) s = strix_error(STRIX_ERR_ALLOC, "index: out of memory");
    }
    if (s == STRIX_OK) qsort(map, (size_t)n, sizeof *map, compare_items);
    for (int i = 1; i < n && s == STRIX_OK; i++)
        if (strcmp(map[i - 1].name, map[i].name) == 0)
            s = strix_error(STRIX_ERR_FORMAT, "index '%s' lists tensor '%s' twice", path,
                            map[i].name);
    if (s == STRIX_OK) s = open_shards(set, path, opt);
    if (s == STRIX_OK) s = gather(set, path);
    if (s == STRIX_OK) s = match(set, map, n, path);
    free(map);
    return s;
}

strix_status strix_st_set_open(const char *index_path, const strix_st_read_options *opt,
                               strix_st_set **out) {
    *out = NULL;
    char *text;
    STRIX_TRY(read_index(index_path, &text));
    strix_st_set *set = calloc(1, sizeof *set);
    cJSON *root = cJSON_Parse(text);
    strix_status s = STRIX_OK;
    if (!set) s = strix_error(STRIX_ERR_ALLOC, "index: out of memory");
    else if (!root) s = strix_error(STRIX_ERR_FORMAT, "index '%s' is not valid JSON", index_path);
    else s = open_set(root, index_path, opt, set);
    cJSON_Delete(root);
    free(text);
    if (s != STRIX_OK) {
        strix_st_set_free(set);
        return s;
    }
    *out = set;
    return STRIX_OK;
}

int strix_st_set_count(const strix_st_set *set) { return set->count; }

const strix_st_tensor *strix_st_set_at(const strix_st_set *set, int i) {
    STRIX_ASSERT(i >= 0 && i < set->count, "set tensor index %d of %d", i, set->count);
    return set->items[i].t;
}

const strix_st_tensor *strix_st_set_find(const strix_st_set *set, const char *name,
                                         const strix_safetensors **shard) {
    set_item key = {.name = name};
    const set_item *hit = bsearch(&key, set->items, (size_t)set->count, sizeof *set->items,
                                  compare_names);
    if (shard) *shard = hit ? set->shards[hit->shard] : NULL;
    return hit ? hit->t : NULL;
}

int strix_st_set_shard_count(const strix_st_set *set) { return set->shard_count; }

const strix_safetensors *strix_st_set_shard(const strix_st_set *set, int i) {
    STRIX_ASSERT(i >= 0 && i < set->shard_count, "shard %d of %d", i, set->shard_count);
    return set->shards[i];
}

const char *strix_st_set_shard_name(const strix_st_set *set, int i) {
    STRIX_ASSERT(i >= 0 && i < set->shard_count, "shard %d of %d", i, set->shard_count);
    return set->shard_names[i];
}

const char *strix_st_set_meta(const strix_st_set *set, const char *key) {
    for (int i = 0; i < set->meta_count; i++)
        if (strcmp(set->meta_keys[i], key) == 0) return set->meta_values[i];
    return NULL;
}

void strix_st_set_free(strix_st_set *set) {
    if (!set) return;
    for (int i = 0; i < set->shard_count; i++) {
        if (set->shards) strix_safetensors_free(set->shards[i]);
        free(set->shard_names[i]);
    }
    for (int i = 0; i < set->meta_count; i++) {
        free(set->meta_keys[i]);
        free(set->meta_values[i]);
    }
    free(set->shards);
    free(set->shard_names);
    free(set->items);
    free(set->meta_keys);
    free(set->meta_values);
    free(set);
}
