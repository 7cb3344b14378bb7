/*
 * dtype.c - the dtype name / DLPack / safetensors tables (see dtype.h).
 */
#include "core/dtype.h"

#include <string.h>

typedef struct dt_info {
	const char *name;    /* canonical definition name */
	const char *st_name; /* safetensors dtype string */
	uint8_t code, bits;  /* DLPack */
	sf_dt ref;           /* reference buffer dtype */
} dt_info;

/* Indexed by sf_dt; entry 0 is SF_DT_INVALID. */
static const dt_info DT[SF_DT_COUNT] = {
	[SF_DT_INVALID] = { "invalid", NULL, 0, 0, SF_DT_INVALID },
	[SF_DT_F64] = { "float64", "F64", SF_CODE_FLOAT, 64, SF_DT_F64 },
	[SF_DT_F32] = { "float32", "F32", SF_CODE_FLOAT, 32, SF_DT_F32 },
	[SF_DT_F16] = { "float16", "F16", SF_CODE_FLOAT, 16, SF_DT_F32 },
	[SF_DT_BF16] = { "bfloat16", "BF16", SF_CODE_BFLOAT, 16, SF_DT_F32 },
	[SF_DT_E4M3] = { "float8_e4m3fn", "F8_E4M3", SF_CODE_FLOAT8_E4M3FN, 8, SF_DT_F32 },
	[SF_DT_E5M2] = { "float8_e5m2", "F8_E5M2", SF_CODE_FLOAT8_E5M2, 8, SF_DT_F32 },
	[SF_DT_E2M1] = { "float4_e2m1", "F4", SF_CODE_FLOAT4_E2M1FN, 4, SF_DT_F32 },
	[SF_DT_I64] = { "int64", "I64", SF_CODE_INT, 64, SF_DT_I64 },
	[SF_DT_I32] = { "int32", "I32", SF_CODE_INT, 32, SF_DT_I32 },
	[SF_DT_I16] = { "int16", "I16", SF_CODE_INT, 16, SF_DT_I16 },
	[SF_DT_I8] = { "int8", "I8", SF_CODE_INT, 8, SF_DT_I8 },
	[SF_DT_U8] = { "uint8", "U8", SF_CODE_UINT, 8, SF_DT_U8 },
	[SF_DT_BOOL] = { "bool", "BOOL", SF_CODE_BOOL, 8, SF_DT_BOOL },
};

static int valid(sf_dt dt)
{
	return dt > SF_DT_INVALID && dt < SF_DT_COUNT;
}

sf_dt sf_dt_from_name(const char *name)
{
	if (!name)
		return SF_DT_INVALID;
	if (!strcmp(name, "float4_e2m1fn_x2"))
		return SF_DT_E2M1;
	for (int i = 1; i < SF_DT_COUNT; i++)
		if (!strcmp(name, DT[i].name))
			return (sf_dt)i;
	return SF_DT_INVALID;
}

const char *sf_dt_name(sf_dt dt)
{
	return valid(dt) ? DT[dt].name : "invalid";
}

sf_dtype sf_dt_to_dlpack(sf_dt dt)
{
	sf_dtype t = { 0, 0, 0 };
	if (valid(dt)) {
		t.code = DT[dt].code;
		t.bits = DT[dt].bits;
		t.lanes = 1;
	}
	return t;
}

sf_dt sf_dt_from_dlpack(sf_dtype t)
{
	if (t.lanes != 1)
		return SF_DT_INVALID;
	for (int i = 1; i < SF_DT_COUNT; i++)
		if (DT[i].code == t.code && DT[i].bits == t.bits)
			return (sf_dt)i;
	return SF_DT_INVALID;
}

const char *sf_dt_safetensors_name(sf_dt dt)
{
	return valid(dt) ? DT[dt].st_name : NULL;
}

sf_dt sf_dt_from_safetensors_name(const char *name)
{
	if (!name)
		return SF_DT_INVALID;
	for (int i = 1; i < SF_DT_COUNT; i++)
		if (!strcmp(name, DT[i].st_name))
			return (sf_dt)i;
	return SF_DT_INVALID;
}

sf_dt sf_dt_reference(sf_dt dt)
{
	return valid(dt) ? DT[dt].ref : SF_DT_INVALID;
}
