/* einsum.c - parses the Einsum equations we support (see einsum.h) into label lists. */
#include <string.h>

#include "graph/einsum.h"

static int letter_code(char ch) {
  if (ch >= 'a' && ch <= 'z') return ch - 'a';
  if (ch >= 'A' && ch <= 'Z') return 26 + (ch - 'A');
  return -1;
}

int mi__einsum_parse(const char *eq, int32_t nin, mi__einsum_t *e, const char **why) {
  int8_t lab_of[52];
  int seen_count[52] = {0};
  int32_t term = 0, pos = 0, in_out = 0;
  memset(e, 0, sizeof *e);
  memset(lab_of, -1, sizeof lab_of);
  *why = NULL;
  if (!eq) return (*why = "no equation"), -1;
  if (nin < 1 || nin > 2) return (*why = "only one or two operands are supported"), -1;
  if (strstr(eq, "...")) return (*why = "ellipsis ('...') is not supported"), -1;
  for (const char *p = eq;; p++) {
    char ch = *p;
    if (ch == ' ') continue;
    if (ch == '\0' || ch == ',' || (ch == '-' && p[1] == '>')) {
      if (in_out) {
        if (ch != '\0') return (*why = "text after the output term"), -1;
        e->out_rank = pos;
        break;
      }
      if (term >= nin) return (*why = "more terms than operands"), -1;
      e->in_rank[term++] = pos;
      pos = 0;
      if (ch == '\0') break;
      if (ch == '-') {
        p++;
        in_out = 1;
        if (term != nin) return (*why = "fewer terms than operands"), -1;
      }
      continue;
    }
    int code = letter_code(ch);
    if (code < 0) return (*why = "labels must be letters"), -1;
    if (!in_out && term >= nin) return (*why = "more terms than operands"), -1;
    if (pos >= MI_MAX_RANK) return (*why = "a term has more than 8 labels"), -1;
    if (lab_of[code] < 0) {
      if (in_out) return (*why = "an output label appears in no operand"), -1;
      lab_of[code] = (int8_t)e->nlab++;
    }
    if (in_out) {
      for (int32_t k = 0; k < pos; k++)
        if (e->out_lab[k] == lab_of[code]) return (*why = "an output label repeats"), -1;
      e->out_lab[pos++] = lab_of[code];
    } else {
      for (int32_t k = 0; k < pos; k++)
        if (e->in_lab[term][k] == lab_of[code])
          return (*why = "a label repeats within one term (diagonals are not supported)"), -1;
      e->in_lab[term][pos++] = lab_of[code];
      seen_count[code]++;
    }
  }
  if (term != nin) return (*why = "the number of terms differs from the number of operands"), -1;
  e->nin = nin;
  if (!in_out) { /* implicit output: the labels used once, in alphabetical order */
    for (int code = 0; code < 52; code++)
      if (seen_count[code] == 1) {
        if (e->out_rank >= MI_MAX_RANK) return (*why = "the output has more than 8 labels"), -1;
        e->out_lab[e->out_rank++] = lab_of[code];
      }
  }
  return 0;
}
