/* The kubeconfig of a `network: proxy` sandbox (docs/secrets.md): its current context's
 * server, bearer token and cluster CA are read (YAML or JSON, the reader of `check`'s
 * manifests); the sandbox gets a kubeconfig of its own for the same server whose token
 * is a placeholder and whose CA is the sandbox CA; the proxy adds the real token on the
 * way to that server and verifies the server against the cluster's CA. */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "agentrun/k8s.h"
#include "agentrun/secrets.h"

#define KUBECONFIG_MAX (1u << 20)

static void cleanup_json(cJSON **j)
{
	cJSON_Delete(*j);
}

static const char *str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The entry named `name` of a list of {name, KIND: {...}}: its KIND object. */
static const cJSON *named(const cJSON *doc, const char *list, const char *kind, const char *name)
{
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(doc, list), *it;
	cJSON_ArrayForEach(it, l)
	{
		const char *n = str(it, "name");
		if (n != NULL && name != NULL && strcmp(n, name) == 0)
			return cJSON_GetObjectItemCaseSensitive(it, kind);
	}
	return NULL;
}

/* https://host[:port][/path]: the rule the proxy binds the token to. */
static int server_rule(struct ar_kubeconfig *k, const char *origin, ar_error_t *err)
{
	const char *s = k->server;
	if (strncmp(s, "https://", 8) != 0)
		return ar_error_make(err, 0,
				     "%s: the server %s is not https:// (the token would "
				     "travel in clear)",
				     origin, s);
	s += 8;
	size_t n = strcspn(s, "/?#");
	ar_autofree char *auth = ar_xstrndup(s, n);
	char host[AR_HOST_MAX];
	if (ar_host_split_port(auth, host, sizeof(host), &k->port, 443, err) == -1)
		return ar_error_wrap(err, "%s: server", origin);
	if (host[0] == '[') { /* [v6] */
		size_t l = strlen(host);
		memmove(host, host + 1, l - 2);
		host[l - 2] = '\0';
	}
	snprintf(k->host, sizeof(k->host), "%s", host);
	k->rule = strchr(k->host, ':') ? ar_xasprintf("[%s]:%d", k->host, k->port)
				       : ar_xasprintf("%s:%d", k->host, k->port);
	return 0;
}

static int cluster_ca(struct ar_kubeconfig *k, const cJSON *cluster, const char *dir,
		      const char *origin, ar_error_t *err)
{
	const char *data = str(cluster, "certificate-authority-data");
	const char *file = str(cluster, "certificate-authority");
	if (data != NULL) {
		ar_autobuf struct ar_buf pem = {0};
		if (ar_base64_decode(data, strlen(data), &pem) == -1)
			return ar_error_make(err, 0, "%s: certificate-authority-data is not base64",
					     origin);
		k->ca_pem = ar_buf_steal(&pem);
	} else if (file != NULL) {
		ar_autofree char *path =
		    file[0] == '/' ? ar_xstrdup(file) : ar_xasprintf("%s/%s", dir, file);
		size_t len;
		if (ar_read_file(path, KUBECONFIG_MAX, &k->ca_pem, &len, err) == -1)
			return ar_error_wrap(err, "%s: certificate-authority", origin);
	}
	return 0;
}

int ar_kubeconfig_parse(const char *text, size_t len, const char *origin, const char *dir,
			struct ar_kubeconfig *k, ar_error_t *err)
{
	*k = (struct ar_kubeconfig){0};
	__attribute__((cleanup(cleanup_json))) cJSON *docs =
	    ar_k8s_read_manifest(text, len, origin, err);
	if (docs == NULL)
		return -1;
	const cJSON *doc = cJSON_GetArrayItem(docs, 0);
	const char *cur = str(doc, "current-context");
	const cJSON *ctx = named(doc, "contexts", "context", cur);
	if (ctx == NULL)
		return ar_error_make(err, 0, "%s: no current-context to use", origin);
	const cJSON *cluster = named(doc, "clusters", "cluster", str(ctx, "cluster"));
	const cJSON *user = named(doc, "users", "user", str(ctx, "user"));
	if (cluster == NULL || str(cluster, "server") == NULL)
		return ar_error_make(err, 0, "%s: the current context's cluster has no server",
				     origin);
	const char *token = user ? str(user, "token") : NULL;
	if (token == NULL || token[0] == '\0')
		return ar_error_make(err, 0,
				     "%s: the current context's user has no token (agentrun "
				     "keeps a bearer token out of the sandbox; client "
				     "certificates and exec plugins are not supported)",
				     origin);
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cluster, "insecure-skip-tls-verify")))
		return ar_error_make(err, 0,
				     "%s: insecure-skip-tls-verify: the token would go "
				     "to an unverified server",
				     origin);
	k->server = ar_xstrdup(str(cluster, "server"));
	k->token = ar_xstrdup(token);
	k->name = ar_xstrdup(cur);
	if (str(ctx, "namespace"))
		k->ns = ar_xstrdup(str(ctx, "namespace"));
	if (server_rule(k, origin, err) == -1 || cluster_ca(k, cluster, dir, origin, err) == -1) {
		ar_kubeconfig_free(k);
		return -1;
	}
	return 0;
}

int ar_kubeconfig_load(const char *path, struct ar_kubeconfig *k, ar_error_t *err)
{
	ar_autofree char *text = NULL;
	size_t len = 0;
	if (ar_read_file(path, KUBECONFIG_MAX, &text, &len, err) == -1)
		return ar_error_wrap(err, "kubeconfig");
	ar_autofree char *d = ar_xstrdup(path);
	ar_autofree char *origin = ar_xasprintf("kubeconfig %s", path);
	int r = ar_kubeconfig_parse(text, len, origin, dirname(d), k, err);
	explicit_bzero(text, len);
	return r;
}

void ar_kubeconfig_free(struct ar_kubeconfig *k)
{
	if (k->token)
		explicit_bzero(k->token, strlen(k->token));
	free(k->token);
	free(k->server);
	free(k->rule);
	free(k->ca_pem);
	free(k->name);
	free(k->ns);
	*k = (struct ar_kubeconfig){0};
}

/* JSON is YAML: the sandbox's kubeconfig, written with the quoting of cJSON. */
void ar_kubeconfig_render(const struct ar_kubeconfig *k, const char *placeholder,
			  const char *ca_pem, struct ar_buf *out)
{
	ar_autobuf struct ar_buf ca = {0};
	ar_base64_encode((const unsigned char *)ca_pem, strlen(ca_pem), &ca);
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "apiVersion", "v1");
	cJSON_AddStringToObject(doc, "kind", "Config");
	cJSON *cl = cJSON_AddArrayToObject(doc, "clusters"), *c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "name", k->name);
	cJSON *cc = cJSON_AddObjectToObject(c, "cluster");
	cJSON_AddStringToObject(cc, "server", k->server);
	cJSON_AddStringToObject(cc, "certificate-authority-data", ca.data ? ca.data : "");
	cJSON_AddItemToArray(cl, c);
	cJSON *us = cJSON_AddArrayToObject(doc, "users"), *u = cJSON_CreateObject();
	cJSON_AddStringToObject(u, "name", k->name);
	cJSON_AddStringToObject(cJSON_AddObjectToObject(u, "user"), "token", placeholder);
	cJSON_AddItemToArray(us, u);
	cJSON *cs = cJSON_AddArrayToObject(doc, "contexts"), *x = cJSON_CreateObject();
	cJSON_AddStringToObject(x, "name", k->name);
	cJSON *xc = cJSON_AddObjectToObject(x, "context");
	cJSON_AddStringToObject(xc, "cluster", k->name);
	cJSON_AddStringToObject(xc, "user", k->name);
	if (k->ns)
		cJSON_AddStringToObject(xc, "namespace", k->ns);
	cJSON_AddItemToArray(cs, x);
	cJSON_AddStringToObject(doc, "current-context", k->name);
	char *text = cJSON_Print(doc);
	ar_buf_puts(out, text);
	ar_buf_putc(out, '\n');
	free(text);
	cJSON_Delete(doc);
}
