// kernels/class_modules.cu: the class kernels alone, for nvcc -fatbin and -ptx; bin2c turns
// both into headers (class_modules_fatbin.h, class_modules_ptx.h) that class_drvlink and
// class_handles load with cuModuleLoadData / cuLibraryLoadData.
#include "class_kernels.cuh"
