/*
 * kernels/adam.h - one Adam update of one parameter (Kingma & Ba 2015, Alg. 1; spec §1.1).
 * Bias corrections bc = 1 − beta^t are computed by the caller. Weight decay is not here (AdamW
 * applies it before, with axpby).
 */
#ifndef STRIX_KERNELS_ADAM_H
#define STRIX_KERNELS_ADAM_H

#include "kernels/common.h"

/* m = b1·m + (1−b1)·g; v = b2·v + (1−b2)·g²; p −= lr·(m/bc1)/(sqrt(v/bc2) + eps). */
STRIX_HD static inline void strix_adam_element(float *param, float grad, float *m, float *v,
                                               float lr, float beta1, float beta2, float eps,
                                               float bias_correction1, float bias_correction2) {
    float m_new = beta1 * *m + (1.0f - beta1) * grad;
    float v_new = beta2 * *v + (1.0f - beta2) * (grad * grad);
    *m = m_new;
    *v = v_new;
    float m_hat = m_new / bias_correction1;
    float v_hat = v_new / bias_correction2;
    *param = *param - lr * m_hat / (sqrtf(v_hat) + eps);
}

#endif
