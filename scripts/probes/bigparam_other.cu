// A second module for bigparam_sizes.cu: a 28,000-byte __constant__ array
// and a kernel reading it, in a translation unit of its own (its own module
// where nothing is compiled with -rdc). Link it in and define OTHER_MODULE to
// launch it once before the timings:
//   nvcc -O2 -arch=native -DNO_CONST -DOTHER_MODULE -o bigparam_two bigparam_sizes.cu bigparam_other.cu
__constant__ int other_excess[7000];

__global__ void other_use(int *out)
{
	int t = 0;
	for (int i = 0; i < 7000; i++)
		t += other_excess[i];
	*out = t;
}

void other_launch(int *out)
{
	other_use<<<1, 1>>>(out);
}
