/* worker_probe.c - prepare probes and check_config questions in the device's worker: while a
 * space is built and searched, the host asks whether a variant prepares a node and whether a
 * knob assignment is valid, and the plugin answers in the worker, so a crash or hang there
 * costs the device, never the host. */
#define _GNU_SOURCE 1
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "measure/measure_internal.h"

enum { P_MODEL,
       P_INPUTS,
       P_OP,
       P_VARIANT,
       P_COUNT };

/* The job as sent: this header, then P_COUNT NUL-terminated texts. */
typedef struct pjob {
  int32_t node;
  uint32_t len[P_COUNT];
} pjob_t;

MI_API int32_t mi_worker_probe(mi_worker_pool_t *p, const char *spec, const char *model,
                               const char *inputs, int32_t node, const char *op_type,
                               const char *variant_id, int32_t *status, mi_error_t *err) {
  const char *t[P_COUNT];
  pjob_t job;
  size_t total;
  char *payload;
  int32_t rc;
  if (status) *status = MI_OK;
  if (!p || !spec || !model || !op_type || !variant_id || !status)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_worker_probe: NULL argument");
  t[P_MODEL] = model;
  t[P_INPUTS] = inputs ? inputs : "";
  t[P_OP] = op_type;
  t[P_VARIANT] = variant_id;
  memset(&job, 0, sizeof job);
  job.node = node;
  for (int i = 0; i < P_COUNT; i++) job.len[i] = (uint32_t)strlen(t[i]) + 1;
  if ((rc = mi__job_pack(&job, sizeof job, job.len, (const void *const *)t, P_COUNT, "probe",
                         &payload, &total, err)))
    return rc;
  rc = mi__worker_exchange(p, spec, MI__JOB_PROBE, payload, total, MI__REPLY_PROBE, status,
                           sizeof *status, err);
  free(payload);
  return rc;
}

/* A check_config question as sent: this header, then `count` knobs. Names are copied into the
 * job (the plugin declared them in fields of 64 bytes). */
typedef struct cjob {
  int32_t has_variant, count;
  char variant[sizeof((mi_variant_desc_t *)0)->id];
} cjob_t;
typedef struct cknob {
  char name[sizeof((mi_knob_desc_t *)0)->name];
  int64_t i;
  double f;
} cknob_t;
typedef struct creply {
  int32_t status;
  mi_error_t why;
} creply_t;
#define CHECK_KNOBS_MAX 256

MI_API int32_t mi_worker_check_config(mi_worker_pool_t *p, const char *spec,
                                      const char *variant_id, const mi_knob_value_t *knobs,
                                      int32_t knob_count, int32_t *status, mi_error_t *why,
                                      mi_error_t *err) {
  cjob_t job;
  cknob_t *kn;
  creply_t reply;
  size_t total;
  int32_t rc;
  if (status) *status = MI_OK;
  if (!p || !spec || !status || knob_count < 0 || (knob_count > 0 && !knobs))
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_worker_check_config: bad argument");
  if (knob_count > CHECK_KNOBS_MAX)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "worker: check_config with %d knobs",
                     (int)knob_count);
  memset(&job, 0, sizeof job);
  job.has_variant = variant_id != NULL;
  job.count = knob_count;
  if (variant_id && strlen(variant_id) >= sizeof job.variant)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "worker: variant id too long");
  if (variant_id) memcpy(job.variant, variant_id, strlen(variant_id) + 1);
  total = sizeof job + (size_t)knob_count * sizeof *kn;
  if (!(kn = calloc(1, total))) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  memcpy(kn, &job, sizeof job);
  for (int32_t i = 0; i < knob_count; i++) {
    cknob_t *k = (cknob_t *)((char *)kn + sizeof job) + i;
    snprintf(k->name, sizeof k->name, "%s", knobs[i].name ? knobs[i].name : "");
    k->i = knobs[i].i;
    k->f = knobs[i].f;
  }
  memset(&reply, 0, sizeof reply);
  rc = mi__worker_exchange(p, spec, MI__JOB_CHECK, kn, total, MI__REPLY_CHECK, &reply,
                           sizeof reply, err);
  free(kn);
  if (rc != MI_OK) return rc;
  reply.why.message[sizeof reply.why.message - 1] = '\0';
  *status = reply.status;
  if (why) *why = reply.why;
  return MI_OK;
}

/* ---------------------------------------------------------------- the worker's side */

/* Replies the plugin's check_config answer (MI_OK without one), through mi__worker_reply: one
 * that printed to stdout or forged a handle while answering fails the question instead. */
void mi__worker_serve_check(int fd, mi_plugin_t *pl, uint32_t dev, const void *payload,
                            size_t n) {
  cjob_t job;
  creply_t reply;
  mi_knob_value_t vals[CHECK_KNOBS_MAX];
  cknob_t *kn = NULL;
  mi_error_t e;
  mi_error_clear(&e);
  if (n < sizeof job) {
    mi_errorf(&e, MI_ERR_INTERNAL, "worker: short check job");
    goto fail;
  }
  memcpy(&job, payload, sizeof job);
  if (job.count < 0 || job.count > CHECK_KNOBS_MAX ||
      n != sizeof job + (size_t)job.count * sizeof *kn ||
      memchr(job.variant, '\0', sizeof job.variant) == NULL) {
    mi_errorf(&e, MI_ERR_INTERNAL, "worker: malformed check job");
    goto fail;
  }
  if (job.count > 0 && !(kn = malloc((size_t)job.count * sizeof *kn))) {
    mi_errorf(&e, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
    goto fail;
  }
  if (job.count > 0) memcpy(kn, (const char *)payload + sizeof job, (size_t)job.count * sizeof *kn);
  for (int32_t i = 0; i < job.count; i++) {
    kn[i].name[sizeof kn[i].name - 1] = '\0';
    vals[i].name = kn[i].name;
    vals[i].i = kn[i].i;
    vals[i].f = kn[i].f;
  }
  memset(&reply, 0, sizeof reply);
  mi_error_clear(&reply.why);
  if (pl->api.check_config)
    reply.status = pl->api.check_config(pl->ctx, dev, job.has_variant ? job.variant : NULL, vals,
                                        job.count, &reply.why);
  reply.why.message[sizeof reply.why.message - 1] = '\0';
  free(kn);
  mi__worker_reply(fd, MI__REPLY_CHECK, &reply, sizeof reply, NULL, 0);
  return;
fail:
  free(kn);
  mi__frame_send(fd, MI__REPLY_ERROR, &e, sizeof e, NULL, 0);
}

void mi__probe_cache_free(mi__probe_cache_t *c) {
  for (int32_t t = 0; c->consts && c->g && t < c->g->tensor_count; t++) free(c->consts[t]);
  free(c->consts);
  mi_graph_destroy(c->g);
  memset(c, 0, sizeof *c);
}

/* The model as the host built its space on it: loaded, input shapes set, sorted, shapes
 * inferred; with views of its constants. Kept while the same (model, inputs) is probed. */
static int32_t probe_model(mi__probe_cache_t *c, const char *model, const char *inputs,
                           mi_error_t *err) {
  char key[sizeof c->key];
  int32_t rc;
  /* A key too long for the buffer is never kept: a cut one could match another model's. */
  int len = snprintf(key, sizeof key, "%s|%s", model, inputs);
  if (len < 0 || (size_t)len >= sizeof key) key[0] = '\0';
  if (c->g && key[0] && strcmp(key, c->key) == 0) return MI_OK;
  mi__probe_cache_free(c);
  if ((rc = mi_onnx_load(model, &c->g, err))) return rc;
  if ((inputs[0] && (rc = mi_graph_set_input_shapes(c->g, inputs, "worker", err))) ||
      (rc = mi_graph_make_static(c->g, NULL, err))) /* as the space's graph (tune_run.c) */
    goto fail;
  if (!(c->consts = calloc((size_t)c->g->tensor_count + 1, sizeof *c->consts))) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
    goto fail;
  }
  for (int32_t t = 0; t < c->g->tensor_count; t++)
    if (c->g->tensors[t].data && !(c->consts[t] = mi__const_view(&c->g->tensors[t]))) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "worker: out of memory");
      goto fail;
    }
  snprintf(c->key, sizeof c->key, "%s", key);
  return MI_OK;
fail:
  mi__probe_cache_free(c);
  return rc;
}

/* Replies the plugin's status for kernel_prepare of the node (MI_OK when it cannot be asked:
 * the measurement will tell), or an error frame when the job itself is wrong. */
void mi__worker_serve_probe(int fd, mi_plugin_t *pl, uint32_t dev, const void *payload,
                            size_t n, mi__probe_cache_t *cache) {
  pjob_t job;
  const char *t[P_COUNT];
  mi_error_t e;
  mi__kdesc_t k;
  mi_kernel_t *kern = NULL;
  int32_t status = MI_OK;
  mi_error_clear(&e);
  if (mi__job_texts(payload, n, &job, sizeof job, job.len, P_COUNT, t, "probe", &e)) goto fail;
  if (probe_model(cache, t[P_MODEL], t[P_INPUTS], &e)) goto fail;
  /* The same node as the host's: same index and op after the same loading steps. */
  if (job.node < 0 || job.node >= cache->g->node_count ||
      strcmp(cache->g->nodes[job.node].op_type, t[P_OP]) != 0) {
    mi_errorf(&e, MI_ERR_INTERNAL, "worker: node %d of %s is not a %s here", (int)job.node,
              t[P_MODEL], t[P_OP]);
    goto fail;
  }
  memset(&k, 0, sizeof k);
  if (mi__kdesc_build(&k, cache->g, job.node, cache->consts, &e) == MI_OK) {
    mi_error_t pe;
    mi_error_clear(&pe);
    k.desc.variant_id = t[P_VARIANT];
    status = pl->api.kernel_prepare(pl->ctx, dev, &k.desc, &kern, &pe);
    if (status == MI_OK && kern) pl->api.kernel_release(pl->ctx, kern);
  }
  mi__kdesc_free(&k);
  mi__worker_reply(fd, MI__REPLY_PROBE, &status, sizeof status, NULL, 0);
  return;
fail:
  mi__frame_send(fd, MI__REPLY_ERROR, &e, sizeof e, NULL, 0);
}
