/*
 * csv.h - CSV as Sluice writes it: the CLI's `-o csv` and the daemon's
 * GET /v1/report?format=csv give the same bytes because both write through
 * here. A field is RFC 4180 (quoted only when it must be), a line ends in
 * LF, and a JSON number becomes text in full: an integer as is, a real in
 * fixed notation (never an exponent) with the fewest decimals, at most
 * SL_CSV_DECIMALS, that read back as it.
 *
 * Pure; thread-safe (each call works on its caller's buffer).
 */
#ifndef SL_CSV_H
#define SL_CSV_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Digits after the point of a real written in full (sl_fmt_decimal). */
#define SL_CSV_DECIMALS 9
/* Bytes of a figure's cell, NUL included: a longer figure is cut there, as
 * the CLI's CSV always cut it (only a real of 1e46 or more is that long). */
#define SL_CSV_CELL 48

/* Append 's' as one field: as it is, or in double quotes, each '"' doubled,
 * when it holds ',', '"', CR or LF or begins or ends with a space. NULL is
 * an empty field. On allocation failure 'b' is marked failed (buf.h). */
void sl_csv_field(struct sl_buf *b, const char *s);
/* Append the 'n' fields of 'cells' (NULL ones empty), separated by commas,
 * and an LF. */
void sl_csv_row(struct sl_buf *b, const char *const *cells, size_t n);

/* A JSON number as text into buf (of 'size' bytes): an integer with
 * "%lld", a real through sl_fmt_decimal with SL_CSV_DECIMALS. Returns buf;
 * "" when v is not a number. */
const char *sl_csv_number(const json_t *v, char *buf, size_t size);
/* obj[key] as an integer: a JSON integer, or a real with no fraction
 * within +-9e15. Returns whether it is one; *out is set only then. */
bool sl_csv_integer(const json_t *obj, const char *key, int64_t *out);

#endif
