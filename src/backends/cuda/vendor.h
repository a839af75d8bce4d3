/*
 * vendor.h - the one place that knows whether the GPU backend files are compiled for NVIDIA
 * (nvcc: CUDA runtime + cuBLAS) or AMD (hipcc with -DSTRIX_HIP_BUILD: HIP runtime, + hipBLAS
 * when STRIX_HAVE_HIPBLAS). The backend files are written against the CUDA names; for HIP the
 * names they use are mapped to their hip* twins here, as ggml does. A name missing below fails
 * to compile under hipcc: add its mapping here, never an #ifdef in a backend file.
 *
 * STRIX_GPU_HAVE_BLAS is 1 when a vendor BLAS is there (always for CUDA), else our own tiled
 * SGEMM (gemm.cu) is the only GEMM. STRIX_GPU_VENDOR names the runtime in messages.
 *
 * Kernel rules that keep both vendors right: no warp shuffles or warp-size assumptions (AMD
 * wavefronts are 64 wide; reduce through shared memory in a fixed order instead), no atomics in
 * reductions, `static __global__` kernels (file-local: the HIP and CUDA copies of a kernel live
 * in one program when both backends are built).
 */
#ifndef STRIX_CUDA_VENDOR_H
#define STRIX_CUDA_VENDOR_H

#ifdef STRIX_HIP_BUILD

#include <hip/hip_runtime.h>
#ifdef STRIX_HAVE_HIPBLAS
#if __has_include(<hipblas/hipblas.h>)
#include <hipblas/hipblas.h>
#else
#include <hipblas.h> /* ROCm 5 */
#endif
#define STRIX_GPU_HAVE_BLAS 1
#else
#define STRIX_GPU_HAVE_BLAS 0
#endif
#define STRIX_GPU_VENDOR "HIP"

/* The create function of the HIP build (backend_impl.h): same source, its own name. */
#define strix_cuda_backend_create strix_hip_backend_create
#define strix_cuda_memory_stats strix_hip_memory_stats

// runtime
#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaErrorNoDevice hipErrorNoDevice
#define cudaErrorInsufficientDriver hipErrorInsufficientDriver
#define cudaErrorMemoryAllocation hipErrorOutOfMemory
#define cudaErrorInvalidDevice hipErrorInvalidDevice
#define cudaGetErrorString hipGetErrorString
#define cudaGetErrorName hipGetErrorName
#define cudaGetLastError hipGetLastError
#define cudaPeekAtLastError hipPeekAtLastError
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDevice hipGetDevice
#define cudaSetDevice hipSetDevice
#define cudaDeviceProp hipDeviceProp_t
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaDeviceSynchronize hipDeviceSynchronize
#define cudaDeviceGetAttribute hipDeviceGetAttribute
#define cudaDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define cudaDevAttrMaxSharedMemoryPerBlock hipDeviceAttributeMaxSharedMemoryPerBlock
#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaMemGetInfo hipMemGetInfo
#define cudaMemcpy hipMemcpy
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemcpy2DAsync hipMemcpy2DAsync
#define cudaMemset hipMemset
#define cudaMemsetAsync hipMemsetAsync
#define cudaMemcpyKind hipMemcpyKind
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaMemcpyHostToHost hipMemcpyHostToHost
#define cudaMemcpyDefault hipMemcpyDefault
#define cudaStream_t hipStream_t
#define cudaStreamCreate hipStreamCreate
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaEvent_t hipEvent_t
#define cudaEventCreate hipEventCreate
#define cudaEventDestroy hipEventDestroy
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#define cudaEventElapsedTime hipEventElapsedTime
#define cudaFuncSetAttribute hipFuncSetAttribute
#define cudaFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize

#if STRIX_GPU_HAVE_BLAS
// hipBLAS
#define cublasHandle_t hipblasHandle_t
#define cublasStatus_t hipblasStatus_t
#define cublasOperation_t hipblasOperation_t
#define CUBLAS_STATUS_SUCCESS HIPBLAS_STATUS_SUCCESS
#define CUBLAS_OP_N HIPBLAS_OP_N
#define CUBLAS_OP_T HIPBLAS_OP_T
#define cublasCreate hipblasCreate
#define cublasDestroy hipblasDestroy
#define cublasSetStream hipblasSetStream
#define cublasSetAtomicsMode hipblasSetAtomicsMode
#define CUBLAS_ATOMICS_NOT_ALLOWED HIPBLAS_ATOMICS_NOT_ALLOWED
#define cublasSgemm hipblasSgemm
#define cublasSgemmStridedBatched hipblasSgemmStridedBatched
#endif

#else /* CUDA */

#include <cublas_v2.h>
#include <cuda_runtime.h>
#define STRIX_GPU_HAVE_BLAS 1
#define STRIX_GPU_VENDOR "CUDA"

#endif

#endif
