#pragma once
#if defined(CUDNN_H_) && !defined(SONATA_EMU_CUDNN_H)
#error \
    "the CUDA toolkit's cudnn.h was included before the emulator's (emu/include): put emu/include first"
#endif
// The toolkit's include guard, so that a toolkit header included later finds this one.
#define CUDNN_H_
#define SONATA_EMU_CUDNN_H
// The emulator's cuDNN: the legacy convolution API sonata calls (handles, 4-d tensor, filter
// and convolution descriptors, algorithm search and workspace sizes, forward, backward data,
// backward filter, backward bias, add tensor) and the v8 RNN API (RNN and RNN data
// descriptors, weight space and its parameters, temp space sizes, forward, backward data,
// backward weights), with cuDNN 9's values and signatures. Every call that touches device
// memory is one piece of work on the handle's stream (emu/libs/cudnn*.cpp).
#include <cstddef>
#include <cstdint>

#include "driver_types.h"

#define CUDNN_MAJOR 9
#define CUDNN_MINOR 19
#define CUDNN_PATCHLEVEL 0
#define CUDNN_VERSION (CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)
#define CUDNN_DIM_MAX 8

typedef enum {
  CUDNN_STATUS_SUCCESS = 0,
  CUDNN_STATUS_NOT_INITIALIZED = 1001,
  CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH = 1002,
  CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH = 1003,
  CUDNN_STATUS_DEPRECATED = 1004,
  CUDNN_STATUS_LICENSE_ERROR = 1005,
  CUDNN_STATUS_RUNTIME_IN_PROGRESS = 1006,
  CUDNN_STATUS_RUNTIME_FP_OVERFLOW = 1007,
  CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED = 1008,
  CUDNN_STATUS_BAD_PARAM = 2000,
  CUDNN_STATUS_BAD_PARAM_NULL_POINTER = 2002,
  CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER = 2003,
  CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED = 2004,
  CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND = 2005,
  CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT = 2006,
  CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH = 2007,
  CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH = 2008,
  CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES = 2009,
  CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE = 2010,
  CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH = 2011,
  CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE = 2012,
  CUDNN_STATUS_NOT_SUPPORTED = 3000,
  CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN = 3001,
  CUDNN_STATUS_NOT_SUPPORTED_SHAPE = 3002,
  CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE = 3003,
  CUDNN_STATUS_NOT_SUPPORTED_LAYOUT = 3004,
  CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER = 3005,
  CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART = 3006,
  CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH = 3007,
  CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING = 3008,
  CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE = 3009,
  CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT = 3010,
  CUDNN_STATUS_NOT_SUPPORTED_PADDING = 3011,
  CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM = 3012,
  CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API = 3013,
  CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE = 3014,
  CUDNN_STATUS_INTERNAL_ERROR = 4000,
  CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED = 4001,
  CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE = 4002,
  CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED = 4003,
  CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED = 4004,
  CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM = 4005,
  CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED = 4006,
  CUDNN_STATUS_EXECUTION_FAILED = 5000,
  CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER = 5001,
  CUDNN_STATUS_EXECUTION_FAILED_CUBLAS = 5002,
  CUDNN_STATUS_EXECUTION_FAILED_CUDART = 5003,
  CUDNN_STATUS_EXECUTION_FAILED_CURAND = 5004,
} cudnnStatus_t;

typedef enum {
  CUDNN_DATA_FLOAT = 0,
  CUDNN_DATA_DOUBLE = 1,
  CUDNN_DATA_HALF = 2,
  CUDNN_DATA_INT8 = 3,
  CUDNN_DATA_INT32 = 4,
  CUDNN_DATA_INT8x4 = 5,
  CUDNN_DATA_UINT8 = 6,
  CUDNN_DATA_UINT8x4 = 7,
  CUDNN_DATA_INT8x32 = 8,
  CUDNN_DATA_BFLOAT16 = 9,
  CUDNN_DATA_INT64 = 10,
  CUDNN_DATA_BOOLEAN = 11,
} cudnnDataType_t;

typedef enum {
  CUDNN_DEFAULT_MATH = 0,
  CUDNN_TENSOR_OP_MATH = 1,
  CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION = 2,
  CUDNN_FMA_MATH = 3,
} cudnnMathType_t;

typedef enum {
  CUDNN_TENSOR_NCHW = 0,
  CUDNN_TENSOR_NHWC = 1,
  CUDNN_TENSOR_NCHW_VECT_C = 2,
} cudnnTensorFormat_t;

typedef enum { CUDNN_NON_DETERMINISTIC = 0, CUDNN_DETERMINISTIC = 1 } cudnnDeterminism_t;

typedef enum { CUDNN_CONVOLUTION = 0, CUDNN_CROSS_CORRELATION = 1 } cudnnConvolutionMode_t;

typedef enum {
  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM = 0,
  CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM = 1,
  CUDNN_CONVOLUTION_FWD_ALGO_GEMM = 2,
  CUDNN_CONVOLUTION_FWD_ALGO_DIRECT = 3,
  CUDNN_CONVOLUTION_FWD_ALGO_FFT = 4,
  CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING = 5,
  CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD = 6,
  CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED = 7,
  CUDNN_CONVOLUTION_FWD_ALGO_COUNT = 8
} cudnnConvolutionFwdAlgo_t;

typedef enum {
  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 = 0,
  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 = 1,
  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT = 2,
  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3 = 3,
  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD = 4,
  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED = 5,
  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING = 6,
  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT = 7
} cudnnConvolutionBwdFilterAlgo_t;

typedef enum {
  CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 = 0,
  CUDNN_CONVOLUTION_BWD_DATA_ALGO_1 = 1,
  CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT = 2,
  CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING = 3,
  CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD = 4,
  CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED = 5,
  CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT = 6
} cudnnConvolutionBwdDataAlgo_t;

typedef enum {
  CUDNN_RNN_RELU = 0,
  CUDNN_RNN_TANH = 1,
  CUDNN_LSTM = 2,
  CUDNN_GRU = 3
} cudnnRNNMode_t;

typedef enum {
  CUDNN_RNN_NO_BIAS = 0,
  CUDNN_RNN_SINGLE_INP_BIAS = 1,
  CUDNN_RNN_DOUBLE_BIAS = 2,
  CUDNN_RNN_SINGLE_REC_BIAS = 3
} cudnnRNNBiasMode_t;

typedef enum { CUDNN_UNIDIRECTIONAL = 0, CUDNN_BIDIRECTIONAL = 1 } cudnnDirectionMode_t;

typedef enum { CUDNN_LINEAR_INPUT = 0, CUDNN_SKIP_INPUT = 1 } cudnnRNNInputMode_t;

typedef enum {
  CUDNN_RNN_ALGO_STANDARD = 0,
  CUDNN_RNN_ALGO_PERSIST_STATIC = 1,
  CUDNN_RNN_ALGO_PERSIST_DYNAMIC = 2,
  CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H = 3,
  CUDNN_RNN_ALGO_COUNT = 4
} cudnnRNNAlgo_t;

typedef enum {
  CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED = 0,
  CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED = 1,
  CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED = 2
} cudnnRNNDataLayout_t;

typedef enum { CUDNN_FWD_MODE_INFERENCE = 0, CUDNN_FWD_MODE_TRAINING = 1 } cudnnForwardMode_t;

typedef enum { CUDNN_WGRAD_MODE_ADD = 0, CUDNN_WGRAD_MODE_SET = 1 } cudnnWgradMode_t;

#define CUDNN_RNN_PADDED_IO_DISABLED 0
#define CUDNN_RNN_PADDED_IO_ENABLED (1U << 0)

struct cudnnContext;
typedef struct cudnnContext* cudnnHandle_t;
struct cudnnTensorStruct;
typedef struct cudnnTensorStruct* cudnnTensorDescriptor_t;
struct cudnnFilterStruct;
typedef struct cudnnFilterStruct* cudnnFilterDescriptor_t;
struct cudnnConvolutionStruct;
typedef struct cudnnConvolutionStruct* cudnnConvolutionDescriptor_t;
struct cudnnRNNStruct;
typedef struct cudnnRNNStruct* cudnnRNNDescriptor_t;
struct cudnnRNNDataStruct;
typedef struct cudnnRNNDataStruct* cudnnRNNDataDescriptor_t;
struct cudnnDropoutStruct;
typedef struct cudnnDropoutStruct* cudnnDropoutDescriptor_t;

typedef struct cudnnConvolutionFwdAlgoPerfStruct {
  cudnnConvolutionFwdAlgo_t algo;
  cudnnStatus_t status;
  float time;
  size_t memory;
  cudnnDeterminism_t determinism;
  cudnnMathType_t mathType;
  int reserved[3];
} cudnnConvolutionFwdAlgoPerf_t;

typedef struct cudnnConvolutionBwdDataAlgoPerfStruct {
  cudnnConvolutionBwdDataAlgo_t algo;
  cudnnStatus_t status;
  float time;
  size_t memory;
  cudnnDeterminism_t determinism;
  cudnnMathType_t mathType;
  int reserved[3];
} cudnnConvolutionBwdDataAlgoPerf_t;

typedef struct cudnnConvolutionBwdFilterAlgoPerfStruct {
  cudnnConvolutionBwdFilterAlgo_t algo;
  cudnnStatus_t status;
  float time;
  size_t memory;
  cudnnDeterminism_t determinism;
  cudnnMathType_t mathType;
  int reserved[3];
} cudnnConvolutionBwdFilterAlgoPerf_t;

size_t cudnnGetVersion(void);
const char* cudnnGetErrorString(cudnnStatus_t status);
cudnnStatus_t cudnnCreate(cudnnHandle_t* handle);
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle);
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId);
cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* streamId);

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* tensorDesc);
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc);
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t tensorDesc,
                                         cudnnTensorFormat_t format, cudnnDataType_t dataType,
                                         int n, int c, int h, int w);
cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t tensorDesc,
                                           cudnnDataType_t dataType, int n, int c, int h, int w,
                                           int nStride, int cStride, int hStride, int wStride);
cudnnStatus_t cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t tensorDesc,
                                         cudnnDataType_t* dataType, int* n, int* c, int* h, int* w,
                                         int* nStride, int* cStride, int* hStride, int* wStride);
// Nd descriptors: the emulator takes 3 or 4 dimensions (the RNN API's states and weights are
// 3-d), fully described by dimensions and strides.
cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t tensorDesc,
                                         cudnnDataType_t dataType, int nbDims, const int dimA[],
                                         const int strideA[]);
cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t tensorDesc,
                                         int nbDimsRequested, cudnnDataType_t* dataType,
                                         int* nbDims, int dimA[], int strideA[]);

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* filterDesc);
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t filterDesc);
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t filterDesc,
                                         cudnnDataType_t dataType, cudnnTensorFormat_t format,
                                         int k, int c, int h, int w);

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* convDesc);
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t convDesc);
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t convDesc, int pad_h,
                                              int pad_w, int u, int v, int dilation_h,
                                              int dilation_w, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t computeType);
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc,
                                          cudnnMathType_t mathType);
cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc,
                                          cudnnMathType_t* mathType);
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc, int groupCount);
cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t convDesc,
                                                    const cudnnTensorDescriptor_t inputTensorDesc,
                                                    const cudnnFilterDescriptor_t filterDesc,
                                                    int* n, int* c, int* h, int* w);

cudnnStatus_t cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t handle, int* count);
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t handle, int* count);
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t handle, int* count);

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
    const cudnnFilterDescriptor_t filterDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount, int* returnedAlgoCount,
    cudnnConvolutionFwdAlgoPerf_t* perfResults);
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc,
    const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t gradDesc, const int requestedAlgoCount, int* returnedAlgoCount,
    cudnnConvolutionBwdDataAlgoPerf_t* perfResults);
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
    const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnFilterDescriptor_t gradDesc, const int requestedAlgoCount, int* returnedAlgoCount,
    cudnnConvolutionBwdFilterAlgoPerf_t* perfResults);

cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void* x,
    const cudnnFilterDescriptor_t wDesc, const void* w, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t yDesc, void* y, const int requestedAlgoCount,
    int* returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t* perfResults, void* workSpace,
    size_t workSpaceSizeInBytes);
cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const void* w,
    const cudnnTensorDescriptor_t dyDesc, const void* dy,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc, void* dx,
    const int requestedAlgoCount, int* returnedAlgoCount,
    cudnnConvolutionBwdDataAlgoPerf_t* perfResults, void* workSpace, size_t workSpaceSizeInBytes);
cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void* x,
    const cudnnTensorDescriptor_t dyDesc, const void* y,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t dwDesc, void* dw,
    const int requestedAlgoCount, int* returnedAlgoCount,
    cudnnConvolutionBwdFilterAlgoPerf_t* perfResults, void* workSpace, size_t workSpaceSizeInBytes);

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnFilterDescriptor_t wDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t yDesc,
    cudnnConvolutionFwdAlgo_t algo, size_t* sizeInBytes);
cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc,
    cudnnConvolutionBwdDataAlgo_t algo, size_t* sizeInBytes);
cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t gradDesc,
    cudnnConvolutionBwdFilterAlgo_t algo, size_t* sizeInBytes);

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha,
                                      const cudnnTensorDescriptor_t xDesc, const void* x,
                                      const cudnnFilterDescriptor_t wDesc, const void* w,
                                      const cudnnConvolutionDescriptor_t convDesc,
                                      cudnnConvolutionFwdAlgo_t algo, void* workSpace,
                                      size_t workSpaceSizeInBytes, const void* beta,
                                      const cudnnTensorDescriptor_t yDesc, void* y);
cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void* alpha,
                                           const cudnnFilterDescriptor_t wDesc, const void* w,
                                           const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                           const cudnnConvolutionDescriptor_t convDesc,
                                           cudnnConvolutionBwdDataAlgo_t algo, void* workSpace,
                                           size_t workSpaceSizeInBytes, const void* beta,
                                           const cudnnTensorDescriptor_t dxDesc, void* dx);
cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void* alpha,
                                             const cudnnTensorDescriptor_t xDesc, const void* x,
                                             const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                             const cudnnConvolutionDescriptor_t convDesc,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void* workSpace,
                                             size_t workSpaceSizeInBytes, const void* beta,
                                             const cudnnFilterDescriptor_t dwDesc, void* dw);
cudnnStatus_t cudnnConvolutionBackwardBias(cudnnHandle_t handle, const void* alpha,
                                           const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                           const void* beta, const cudnnTensorDescriptor_t dbDesc,
                                           void* db);
cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void* alpha,
                             const cudnnTensorDescriptor_t aDesc, const void* A, const void* beta,
                             const cudnnTensorDescriptor_t cDesc, void* C);

// The v8 RNN API (cudnn_adv.h in cuDNN 9).
cudnnStatus_t cudnnCreateRNNDescriptor(cudnnRNNDescriptor_t* rnnDesc);
cudnnStatus_t cudnnDestroyRNNDescriptor(cudnnRNNDescriptor_t rnnDesc);
cudnnStatus_t cudnnSetRNNDescriptor_v8(cudnnRNNDescriptor_t rnnDesc, cudnnRNNAlgo_t algo,
                                       cudnnRNNMode_t cellMode, cudnnRNNBiasMode_t biasMode,
                                       cudnnDirectionMode_t dirMode, cudnnRNNInputMode_t inputMode,
                                       cudnnDataType_t dataType, cudnnDataType_t mathPrec,
                                       cudnnMathType_t mathType, int32_t inputSize,
                                       int32_t hiddenSize, int32_t projSize, int32_t numLayers,
                                       cudnnDropoutDescriptor_t dropoutDesc, uint32_t auxFlags);
cudnnStatus_t cudnnCreateRNNDataDescriptor(cudnnRNNDataDescriptor_t* rnnDataDesc);
cudnnStatus_t cudnnDestroyRNNDataDescriptor(cudnnRNNDataDescriptor_t rnnDataDesc);
cudnnStatus_t cudnnSetRNNDataDescriptor(cudnnRNNDataDescriptor_t rnnDataDesc,
                                        cudnnDataType_t dataType, cudnnRNNDataLayout_t layout,
                                        int maxSeqLength, int batchSize, int vectorSize,
                                        const int seqLengthArray[], void* paddingFill);
cudnnStatus_t cudnnGetRNNWeightSpaceSize(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                         size_t* weightSpaceSize);
cudnnStatus_t cudnnGetRNNWeightParams(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                      int32_t pseudoLayer, size_t weightSpaceSize,
                                      const void* weightSpace, int32_t linLayerID,
                                      cudnnTensorDescriptor_t mDesc, void** mAddr,
                                      cudnnTensorDescriptor_t bDesc, void** bAddr);
cudnnStatus_t cudnnGetRNNTempSpaceSizes(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                        cudnnForwardMode_t fwdMode, cudnnRNNDataDescriptor_t xDesc,
                                        size_t* workSpaceSize, size_t* reserveSpaceSize);
cudnnStatus_t cudnnRNNForward(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                              cudnnForwardMode_t fwdMode, const int32_t devSeqLengths[],
                              cudnnRNNDataDescriptor_t xDesc, const void* x,
                              cudnnRNNDataDescriptor_t yDesc, void* y,
                              cudnnTensorDescriptor_t hDesc, const void* hx, void* hy,
                              cudnnTensorDescriptor_t cDesc, const void* cx, void* cy,
                              size_t weightSpaceSize, const void* weightSpace, size_t workSpaceSize,
                              void* workSpace, size_t reserveSpaceSize, void* reserveSpace);
cudnnStatus_t cudnnRNNBackwardData_v8(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                      const int32_t devSeqLengths[], cudnnRNNDataDescriptor_t yDesc,
                                      const void* y, const void* dy, cudnnRNNDataDescriptor_t xDesc,
                                      void* dx, cudnnTensorDescriptor_t hDesc, const void* hx,
                                      const void* dhy, void* dhx, cudnnTensorDescriptor_t cDesc,
                                      const void* cx, const void* dcy, void* dcx,
                                      size_t weightSpaceSize, const void* weightSpace,
                                      size_t workSpaceSize, void* workSpace,
                                      size_t reserveSpaceSize, void* reserveSpace);
cudnnStatus_t cudnnRNNBackwardWeights_v8(cudnnHandle_t handle, cudnnRNNDescriptor_t rnnDesc,
                                         cudnnWgradMode_t addGrad, const int32_t devSeqLengths[],
                                         cudnnRNNDataDescriptor_t xDesc, const void* x,
                                         cudnnTensorDescriptor_t hDesc, const void* hx,
                                         cudnnRNNDataDescriptor_t yDesc, const void* y,
                                         size_t weightSpaceSize, void* dweightSpace,
                                         size_t workSpaceSize, void* workSpace,
                                         size_t reserveSpaceSize, void* reserveSpace);
