/* npu_cost.c - the cycle, DMA, energy and thermal model of the simulated NPU, and its noise. */
#include "npu_internal.h"

#include <math.h>

double npu__effective_mhz(const npu_device_t *d, int level) {
  return d->spec.levels[level].mhz * (d->throttled ? d->spec.throttle_ratio : 1.0);
}

/* Cycles one core spends on a MAC op, for `cores` active cores. */
static double mac_cycles(const npu_spec_t *s, const mi_kernel_t *k, const npu_mac_t *m,
                         int cores) {
  double R = s->mac_rows, C = s->mac_cols, fill = R + C;
  double nc = ceil(m->cpad / C), nk = ceil(m->kpad / R), cyc;
  if (k->dataflow == NPU_DATAFLOW_WS) {
    /* each weight tile is loaded into the array (R cycles) then M rows stream through;
     * tiles are spread over cores, or rows when there are fewer tiles than cores */
    double units = nc * nk * m->groups;
    double by_tiles = ceil(units / cores) * (m->m + R + fill);
    double by_rows = units * (ceil(m->m / cores) + R + fill);
    cyc = by_tiles < by_rows ? by_tiles : by_rows;
  } else {
    /* R output rows x C channels accumulate in place while the reduction streams in */
    double tiles = ceil(m->m / R) * nc * m->groups;
    cyc = ceil(tiles / cores) * (m->kpad + fill);
  }
  return k->fp ? cyc * s->fp16_divisor : cyc;
}

/* DMA bytes beyond one pass over inputs, weights and outputs: re-loads caused by tiling. */
static double reload_bytes(const npu_spec_t *s, const mi_kernel_t *k, const npu_mac_t *m,
                           int cores, int batch) {
  double sram = s->sram_kib * 1024, extra = 0;
  double buf = k->dma_overlap ? 2 : 1;
  double tiles = ceil(m->cpad * m->groups / m->tile);
  double samples = k->samples > 0 ? (double)k->samples : 1;
  if (k->dataflow == NPU_DATAFLOW_WS) {
    /* input stays resident only when it fits next to a weight tile */
    if (m->in_bytes + buf * m->tile * m->w_per_channel > sram) extra += m->in_bytes * (tiles - 1);
    /* weights stream once per micro-batch of `batch` samples when they do not fit on chip */
    if (m->w_bytes > sram * cores && samples > 1)
      extra += m->w_bytes * (ceil(samples / (batch < samples ? batch : samples)) - 1);
  } else {
    double resident = m->w_bytes + buf * (m->in_band + m->cpad * m->out_band_per_channel);
    if (resident > sram) extra += m->w_bytes * (ceil(m->m / (s->mac_rows * cores)) - 1);
  }
  return extra;
}

void npu__cost(const npu_device_t *d, const mi_kernel_t *k, npu_cost_t *out) {
  const npu_spec_t *s = &d->spec;
  int cores = k->cores > 0 ? k->cores : d->cores;
  int level = k->level >= 0 ? k->level : d->level;
  int batch = k->batch > 0 ? k->batch : d->batch;
  double f = npu__effective_mhz(d, level) * 1e6, V = s->levels[level].volts;
  double vmax = s->levels[s->level_count - 1].volts;
  double cycles = 0, overhead = s->launch_cycles, bytes = k->io_bytes + k->const_bytes;
  double e_switch = 0, bw, t, tc, td, p_static, p_clock;
  double lanes = s->vector_lanes * (k->fp ? 0.5 : 1.0);
  int i;
  for (i = 0; i < k->node_count; i++) {
    const npu_node_t *n = &k->nodes[i];
    double c;
    if (n->op == NPU_CONV || n->op == NPU_GEMM || n->op == NPU_MATMUL) {
      c = mac_cycles(s, k, &n->mac, cores);
      bytes += reload_bytes(s, k, &n->mac, cores, batch);
      /* switched capacitance follows the padded MACs: padding lanes toggle too */
      e_switch += s->c_eff_nf * 1e-9 * V * V * n->mac.m * n->mac.kpad * n->mac.cpad *
                  n->mac.groups / (s->mac_rows * s->mac_cols) * (k->fp ? s->fp16_divisor : 1);
    } else if (n->fused) {
      c = 0; /* epilogue in the array's output stage */
    } else {
      c = ceil(n->vec_ops / (lanes * cores));
      e_switch += 0.1 * s->c_eff_nf * 1e-9 * V * V * c * cores;
    }
    cycles += c;
    if (!n->fused && cores > 1) overhead += s->sync_cycles * (cores - 1);
  }
  /* the DMA engine runs in the core clock domain: at low clocks it cannot use the full
   * external bandwidth */
  bw = s->dma_gbs * 1e9;
  if (s->dma_bytes_per_cycle * f < bw) bw = s->dma_bytes_per_cycle * f;
  tc = cycles / f;
  td = bytes / bw;
  if (k->dma_overlap)
    t = (tc > td ? tc : td) + (1 - s->overlap_eff) * (tc < td ? tc : td);
  else
    t = tc + td;
  t += overhead / f;
  /* idle cores are power-gated: a quarter of the leakage is uncore */
  p_static = s->static_w * (V / vmax) * (0.25 + 0.75 * cores / s->cores);
  p_clock = s->c_clock_nf * 1e-9 * V * V * f * cores;
  out->time_s = t;
  out->compute_s = tc;
  out->dma_s = td;
  out->dma_bytes = bytes;
  out->energy_j = (p_static + p_clock) * t + e_switch + s->dma_pj_per_byte * 1e-12 * bytes;
  out->power_w = t > 0 ? out->energy_j / t : 0;
}

/* First-order thermal model over simulated time, with a 3 C hysteresis on throttling. */
void npu__advance(npu_device_t *d, const npu_cost_t *c) {
  const npu_spec_t *s = &d->spec;
  double tss = s->ambient_c + s->thermal_r * c->power_w;
  d->temp_c = tss + (d->temp_c - tss) * exp(-c->time_s / s->thermal_tau_s);
  if (!d->throttled && d->temp_c > s->throttle_c) d->throttled = 1;
  else if (d->throttled && d->temp_c < s->throttle_c - 3)
    d->throttled = 0;
  d->sim_time_s += c->time_s;
  d->energy_pj += (uint64_t)llround(c->energy_j * 1e12);
  d->runs++;
  d->has_last = 1;
  d->last_time_s = c->time_s;
  d->last_power_w = c->power_w;
}

static uint64_t next_u64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A multiplicative noise factor 1 + sigma * N(0,1), from the device's seeded generator. */
double npu__noise(npu_device_t *d) {
  double u1, u2, g, f;
  if (d->spec.noise <= 0) return 1.0;
  u1 = ((double)(next_u64(&d->rng) >> 11) + 0.5) / 9007199254740992.0;
  u2 = ((double)(next_u64(&d->rng) >> 11) + 0.5) / 9007199254740992.0;
  g = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
  f = 1.0 + d->spec.noise * g;
  return f < 0.05 ? 0.05 : f;
}
