# turn a naive.cu into host C++ (verification only): kernels become host functions run over the grid
import re, sys
src = open(sys.argv[1]).read()
src = re.sub(r'(\w+)<<<([^,]+),\s*([^,]+),\s*0,\s*stream>>>\(', r'host_launch(\2, \3, \1, ', src)
src = src.replace('__global__', 'static').replace('__device__ __forceinline__', 'static inline')
src = src.replace('__constant__', 'static').replace('__device__', 'static')
src = src.replace('cudaGetLastError()', 'cudaSuccess')
open(sys.argv[2], 'w').write('#include "/tmp/shim/shim.h"\n' + src)
