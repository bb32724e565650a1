#pragma once
// cuBLAS status check for the harness's GPU code: throws, naming the call.

#include <cublas_v2.h>

#include <stdexcept>
#include <string>

namespace topoep {

inline void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(call) + " failed: cuBLAS status " +
                             std::to_string(static_cast<int>(status)));
  }
}

}  // namespace topoep
