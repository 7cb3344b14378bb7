/*
 * hw.c - the hardware spec table (see hw.h).
 *
 * Rates are dense (no 2:4 sparsity), at the boost clock, from the vendors' datasheets and
 * architecture whitepapers. sfu: special-function throughput = SMs x 16 ops/clk x boost clock
 * (4 per SM sub-partition, as the Hopper and Blackwell whitepapers give for MUFU operations).
 */
#include "core/hw.h"

#include <string.h>
#include <strings.h>

#define TF 1e12

const sf_hw sf_hw_table[] = {
	{
		.name = "H100_SXM",
		.match = "H100",
		.sms = 132,
		.l2_bytes = 50e6,
		.hbm_bytes_per_s = 3.35e12,
		.rate = { [SF_UNIT_FP64] = 67 * TF, [SF_UNIT_FP32] = 67 * TF, [SF_UNIT_TF32_TENSOR] = 494.7 * TF,
			  [SF_UNIT_BF16_TENSOR] = 989.4 * TF, [SF_UNIT_FP16_TENSOR] = 989.4 * TF,
			  [SF_UNIT_FP8_TENSOR] = 1978.9 * TF, [SF_UNIT_FP4_TENSOR] = 0,
			  [SF_UNIT_INT8_TENSOR] = 1978.9 * TF, [SF_UNIT_SFU] = 132 * 16 * 1.98e9 },
		.source = "NVIDIA H100 Tensor Core GPU datasheet (SXM5), Hopper architecture whitepaper",
	},
	{
		.name = "H200_SXM",
		.match = "H200",
		.sms = 132,
		.l2_bytes = 60e6,
		.hbm_bytes_per_s = 4.8e12,
		.rate = { [SF_UNIT_FP64] = 67 * TF, [SF_UNIT_FP32] = 67 * TF, [SF_UNIT_TF32_TENSOR] = 494.7 * TF,
			  [SF_UNIT_BF16_TENSOR] = 989.4 * TF, [SF_UNIT_FP16_TENSOR] = 989.4 * TF,
			  [SF_UNIT_FP8_TENSOR] = 1978.9 * TF, [SF_UNIT_FP4_TENSOR] = 0,
			  [SF_UNIT_INT8_TENSOR] = 1978.9 * TF, [SF_UNIT_SFU] = 132 * 16 * 1.98e9 },
		.source = "NVIDIA H200 Tensor Core GPU datasheet (SXM: 141 GB HBM3e, 4.8 TB/s; compute as H100 SXM)",
	},
	{
		.name = "B200",
		.match = "B200",
		.sms = 148,
		.l2_bytes = 126e6,
		.hbm_bytes_per_s = 8e12,
		.rate = { [SF_UNIT_FP64] = 40 * TF, [SF_UNIT_FP32] = 80 * TF, [SF_UNIT_TF32_TENSOR] = 1100 * TF,
			  [SF_UNIT_BF16_TENSOR] = 2250 * TF, [SF_UNIT_FP16_TENSOR] = 2250 * TF,
			  [SF_UNIT_FP8_TENSOR] = 4500 * TF, [SF_UNIT_FP4_TENSOR] = 9000 * TF,
			  [SF_UNIT_INT8_TENSOR] = 4500 * TF, [SF_UNIT_SFU] = 148 * 16 * 1.965e9 },
		.source = "NVIDIA DGX B200 / HGX B200 datasheet (per GPU, dense)",
	},
	{ .name = NULL },
};

const sf_hw *sf_hw_by_name(const char *name)
{
	for (const sf_hw *h = sf_hw_table; h->name; h++)
		if (!strcasecmp(h->name, name))
			return h;
	return NULL;
}

const sf_hw *sf_hw_by_device(const char *device_name)
{
	for (const sf_hw *h = sf_hw_table; h->name; h++)
		if (strstr(device_name, h->match))
			return h;
	return NULL;
}

const sf_hw *sf_hw_default(void)
{
	return sf_hw_by_name("H200_SXM");
}
