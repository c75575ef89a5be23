/* THC/THCDeviceTensor.cuh: THCDeviceTensor<T, Dim, IndexT, PtrTraits>, the
 * view of a CUDA tensor that THC's and THCUNN's kernels took by value: a
 * data pointer with Dim sizes and strides (in elements, of type IndexT,
 * int by default). In a kernel, t[i][j][k] indexes it dimension by dimension
 * (each [] a THCDeviceSubTensor); with all Dim indices given, the element
 * reads as a T, is assigned with =, +=, -=, *=, /=, read through the
 * read-only cache with .ldg(), and addressed with .data().
 * THCDeviceTensorUtils.cuh makes one from a THC tensor (toDeviceTensor). */
#ifndef KERNFORGE_LEGACY_THC_DEVICE_TENSOR_CUH
#define KERNFORGE_LEGACY_THC_DEVICE_TENSOR_CUH

#include <cuda_runtime.h>

template <typename T>
struct DefaultPtrTraits {
  typedef T* PtrType;
};
template <typename T>
struct RestrictPtrTraits {
  typedef T* __restrict__ PtrType;
};

template <typename TensorType, int SubDim, template <typename U> class PtrTraits>
class THCDeviceSubTensor;

template <typename T, int Dim, typename IndexT = int,
          template <typename U> class PtrTraits = DefaultPtrTraits>
class THCDeviceTensor {
 public:
  enum { NumDim = Dim };
  typedef T DataType;
  typedef IndexT IndexType;
  typedef typename PtrTraits<T>::PtrType DataPtrType;
  typedef THCDeviceTensor<T, Dim, IndexT, PtrTraits> TensorType;

  /* no data: every size 0 */
  __host__ __device__ THCDeviceTensor() : data_(nullptr) {
    for (int d = 0; d < Dim; ++d) {
      size_[d] = 0;
      stride_[d] = 1;
    }
  }
  /* contiguous: the last dimension's stride 1 */
  __host__ __device__ THCDeviceTensor(DataPtrType data, const IndexT sizes[Dim]) : data_(data) {
    IndexT stride = 1;
    for (int d = Dim - 1; d >= 0; --d) {
      size_[d] = sizes[d];
      stride_[d] = stride;
      stride *= sizes[d];
    }
  }
  __host__ __device__ THCDeviceTensor(DataPtrType data, const IndexT sizes[Dim],
                                      const IndexT strides[Dim])
      : data_(data) {
    for (int d = 0; d < Dim; ++d) {
      size_[d] = sizes[d];
      stride_[d] = strides[d];
    }
  }

  __host__ __device__ __forceinline__ DataPtrType data() const { return data_; }
  __host__ __device__ __forceinline__ IndexT getSize(int d) const { return size_[d]; }
  __host__ __device__ __forceinline__ IndexT getStride(int d) const { return stride_[d]; }
  __host__ __device__ __forceinline__ const IndexT* sizes() const { return size_; }
  __host__ __device__ __forceinline__ const IndexT* strides() const { return stride_; }
  __host__ __device__ ptrdiff_t numElements() const {
    ptrdiff_t n = 1;
    for (int d = 0; d < Dim; ++d) n *= size_[d];
    return n;
  }
  /* the layout of a contiguous tensor (dimensions of size 1 aside) */
  __host__ __device__ bool isContiguous() const {
    IndexT expected = 1;
    for (int d = Dim - 1; d >= 0; --d) {
      if (size_[d] != 1 && stride_[d] != expected) return false;
      expected *= size_[d];
    }
    return true;
  }

  __host__ __device__ __forceinline__ THCDeviceSubTensor<TensorType, Dim - 1, PtrTraits> operator[](
      IndexT index) const {
    return THCDeviceSubTensor<TensorType, Dim - 1, PtrTraits>(*this, data_ + index * stride_[0]);
  }

 private:
  DataPtrType data_;
  IndexT size_[Dim];
  IndexT stride_[Dim];
};

/* SubDim dimensions left to index */
template <typename TensorType, int SubDim, template <typename U> class PtrTraits>
class THCDeviceSubTensor {
 public:
  typedef typename TensorType::DataType T;
  typedef typename TensorType::IndexType IndexT;
  typedef typename PtrTraits<T>::PtrType DataPtrType;

  __host__ __device__ __forceinline__ THCDeviceSubTensor(const TensorType& tensor, DataPtrType data)
      : tensor_(tensor), data_(data) {}
  __host__ __device__ __forceinline__ THCDeviceSubTensor<TensorType, SubDim - 1, PtrTraits>
  operator[](IndexT index) const {
    return THCDeviceSubTensor<TensorType, SubDim - 1, PtrTraits>(
        tensor_, data_ + index * tensor_.getStride(TensorType::NumDim - SubDim));
  }
  __host__ __device__ __forceinline__ DataPtrType data() const { return data_; }

 private:
  const TensorType& tensor_;
  DataPtrType data_;
};

/* every dimension indexed: one element */
template <typename TensorType, template <typename U> class PtrTraits>
class THCDeviceSubTensor<TensorType, 0, PtrTraits> {
 public:
  typedef typename TensorType::DataType T;
  typedef typename PtrTraits<T>::PtrType DataPtrType;

  __host__ __device__ __forceinline__ THCDeviceSubTensor(const TensorType&, DataPtrType data)
      : data_(data) {}
  __host__ __device__ __forceinline__ operator T() const { return *data_; }
  __host__ __device__ __forceinline__ THCDeviceSubTensor& operator=(const T& v) {
    *data_ = v;
    return *this;
  }
  __host__ __device__ __forceinline__ THCDeviceSubTensor& operator+=(const T& v) {
    *data_ += v;
    return *this;
  }
  __host__ __device__ __forceinline__ THCDeviceSubTensor& operator-=(const T& v) {
    *data_ -= v;
    return *this;
  }
  __host__ __device__ __forceinline__ THCDeviceSubTensor& operator*=(const T& v) {
    *data_ *= v;
    return *this;
  }
  __host__ __device__ __forceinline__ THCDeviceSubTensor& operator/=(const T& v) {
    *data_ /= v;
    return *this;
  }
  __device__ __forceinline__ T ldg() const { return __ldg(data_); }
  __host__ __device__ __forceinline__ DataPtrType data() const { return data_; }

 private:
  DataPtrType data_;
};

#endif /* KERNFORGE_LEGACY_THC_DEVICE_TENSOR_CUH */
