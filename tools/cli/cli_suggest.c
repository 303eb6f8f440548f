/* cli_suggest.c - "did you mean": the closest known word to a misspelt option or command. */
#include <string.h>

#include "mi_cli.h"

/* Optimal string alignment distance (Levenshtein plus swapping two neighbours), the measure
 * git and cargo use for their suggestions. Words longer than 63 characters are not compared. */
static size_t distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  size_t d[64][64];
  if (n >= 64 || m >= 64) return (size_t)-1;
  for (size_t i = 0; i <= n; i++) d[i][0] = i;
  for (size_t j = 0; j <= m; j++) d[0][j] = j;
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      size_t cost = a[i - 1] != b[j - 1], best = d[i - 1][j - 1] + cost;
      if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[n][m];
}

const char *mi_cli_suggest(const char *word, const char *const *cands, size_t n) {
  const char *best = NULL;
  size_t best_d = (size_t)-1, limit = 1 + strlen(word) / 4;
  for (size_t i = 0; word && i < n; i++) {
    size_t dist = cands[i] ? distance(word, cands[i]) : (size_t)-1;
    if (dist < best_d) {
      best_d = dist;
      best = cands[i];
    }
  }
  return best_d <= limit ? best : NULL;
}
