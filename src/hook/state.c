/* The OCI state reader: the JSON a runtime writes on a hook's stdin, into struct
 * ar_oci_state. Pure over a buffer (no I/O), so it is unit-tested and fuzzed; the
 * input comes from the runtime, but its id and annotations from whoever made the
 * container, so every field is checked before it names a file. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "agentrun/hook.h"
#include "agentrun/util.h"

#define PID_MAX 4194304 /* PID_MAX_LIMIT on 64-bit kernels */

static void cleanup_cjsonp(cJSON **j)
{
	cJSON_Delete(*j);
}
#define autocjson __attribute__((cleanup(cleanup_cjsonp)))

bool ar_hook_id_valid(const char *id)
{
	size_t n = strlen(id);
	if (n == 0 || n > AR_HOOK_ID_MAX || strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
		return false;
	return strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+-") ==
	       n;
}

/* A required (or optional) string member; errors name it. */
static int get_string(const cJSON *root, const char *key, bool required, char **out,
		      ar_error_t *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
	if (v == NULL || cJSON_IsNull(v)) {
		if (required)
			return ar_error_make(err, 0, "state: %s: missing", key);
		return 0;
	}
	if (!cJSON_IsString(v) || v->valuestring == NULL)
		return ar_error_make(err, 0, "state: %s: expected a string", key);
	if (strlen(v->valuestring) == 0)
		return ar_error_make(err, 0, "state: %s: empty", key);
	*out = ar_xstrdup(v->valuestring);
	return 0;
}

static int get_pid(const cJSON *root, pid_t *out, ar_error_t *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "pid");
	*out = 0;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
	/* a container whose process is gone (poststop): runc writes 0, runsc -1 */
	if (!(d >= -1 && d <= PID_MAX) || !ar_double_is_int(d))
		return ar_error_make(err, 0, "state: pid: expected a process id (-1 to %d)",
				     PID_MAX);
	*out = d > 0 ? (pid_t)d : 0;
	return 0;
}

static int get_annotations(const cJSON *root, struct ar_oci_state *s, ar_error_t *err)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "annotations"), *e;
	if (a == NULL || cJSON_IsNull(a))
		return 0;
	if (!cJSON_IsObject(a))
		return ar_error_make(err, 0, "state: annotations: expected an object");
	size_t n = (size_t)cJSON_GetArraySize(a);
	s->annotations = ar_xcalloc(2 * n + 1, sizeof(char *));
	cJSON_ArrayForEach(e, a)
	{
		if (!cJSON_IsString(e) || e->valuestring == NULL)
			return ar_error_make(err, 0, "state: annotations: `%s`: expected a string",
					     e->string ? e->string : "");
		s->annotations[2 * s->n_annotations] = ar_xstrdup(e->string ? e->string : "");
		s->annotations[2 * s->n_annotations + 1] = ar_xstrdup(e->valuestring);
		s->n_annotations++;
	}
	return 0;
}

static int read_fields(const cJSON *root, struct ar_oci_state *s, ar_error_t *err)
{
	if (get_string(root, "ociVersion", true, &s->oci_version, err) < 0 ||
	    get_string(root, "id", true, &s->id, err) < 0 ||
	    get_string(root, "status", true, &s->status, err) < 0 ||
	    get_string(root, "bundle", true, &s->bundle, err) < 0 ||
	    get_pid(root, &s->pid, err) < 0 || get_annotations(root, s, err) < 0)
		return -1;
	if (!ar_hook_id_valid(s->id)) {
		ar_autofree char *shown = ar_printable(s->id, 64);
		return ar_error_make(err, 0,
				     "state: id: `%s` is not a container id (letters, digits, "
				     "`_.+-`, at most %d)",
				     shown, AR_HOOK_ID_MAX);
	}
	if (s->bundle[0] != '/')
		return ar_error_make(err, 0, "state: bundle: expected an absolute path");
	return 0;
}

int ar_oci_state_parse(const char *json, size_t len, struct ar_oci_state **out, ar_error_t *err)
{
	*out = NULL;
	if (ar_json_refuse_nul(json, len, "state", err) < 0)
		return -1;
	autocjson cJSON *root = cJSON_ParseWithLength(json, len);
	if (root == NULL)
		return ar_error_make(err, 0, "state: not valid JSON");
	if (!cJSON_IsObject(root))
		return ar_error_make(err, 0, "state: expected a JSON object");
	struct ar_oci_state *s = ar_xcalloc(1, sizeof(*s));
	if (read_fields(root, s, err) < 0) {
		ar_oci_state_free(s);
		return -1;
	}
	*out = s;
	return 0;
}

void ar_oci_state_free(struct ar_oci_state *s)
{
	if (s == NULL)
		return;
	free(s->oci_version);
	free(s->id);
	free(s->status);
	free(s->bundle);
	ar_strv_free(s->annotations);
	free(s);
}

void ar_cleanup_oci_statep(struct ar_oci_state **s)
{
	ar_oci_state_free(*s);
	*s = NULL;
}

const char *ar_oci_state_annotation(const struct ar_oci_state *s, const char *key)
{
	for (size_t i = 0; i < s->n_annotations; i++)
		if (strcmp(s->annotations[2 * i], key) == 0)
			return s->annotations[2 * i + 1];
	return NULL;
}
