/*
 * check.h - judging a candidate's outputs against the reference outputs of the same round.
 *
 * Per element, with x the candidate and y the reference (both as doubles): it matches when
 * |x - y| <= atol + rtol * |y|; NaN or infinity in either fails, except a reference -inf met by a
 * candidate -inf when allow_negative_inf is set, and equal infinities. The round passes when the
 * matched ratio reaches required_matched_ratio, no error exceeds max_error_cap (when set), and the
 * candidate is not all zeros where the reference is not. Shape and dtype are checked first.
 */
#ifndef SF_CHECK_H
#define SF_CHECK_H

#include "core/problem.h"
#include "core/status.h"

typedef struct sf_check {
	sf_status status;      /* PASSED, INCORRECT_NUMERICAL, INCORRECT_SHAPE or INCORRECT_DTYPE */
	double max_abs;        /* over all outputs */
	double max_rel;        /* |x-y| / max(|y|, atol) */
	double matched_ratio;  /* worst output */
	char msg[512];         /* first failure, naming the output and an element */
} sf_check;

/* Compares OUT files of one round; job gives names, dtypes and shapes. */
int sf_check_round(const char *ref_path, const char *sol_path, const sf_job *job, const sf_tolerance *tol,
		   sf_check *out, char *err, size_t errlen);

/* Folds round results: the first failing round wins, errors take the max. */
void sf_check_merge(sf_check *acc, const sf_check *round, int first);

#endif
