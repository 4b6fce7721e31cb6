/* A sandbox's secrets on agentrun's side (docs/secrets.md): the placeholders (made
 * before the clone: the sandbox's environment carries them), the sources checked before
 * anything is created, and the CA bundle the sandbox trusts: the host's roots written
 * into the sandbox's state directory now (bound over the distribution's bundle path in
 * the sandbox's view), the sandbox CA appended once the proxy reports it, before the
 * command starts. The CA's key never leaves the proxy process. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentrun/net.h"
#include "agentrun/proxy.h"
#include "agentrun/rules.h"
#include "agentrun/secrets.h"
#include "agentrun/util.h"
#include "internal.h"

#define BUNDLE_MAX (16u << 20)

static int write_roots(struct ar_net *n, ar_error_t *err)
{
	const char *root = n->p->rootfs ? n->p->rootfs : "/";
	const char *target = ar_proxy_tls_host_bundle(root);
	if (target == NULL)
		return ar_error_make(err, 0,
				     "%s: secrets: no CA bundle in the sandbox's view "
				     "(/etc/ssl/certs/ca-certificates.crt, ...) to add the "
				     "sandbox CA to",
				     n->p->origin);
	ar_autofree char *src = ar_xasprintf("%s%s", strcmp(root, "/") == 0 ? "" : root, target);
	ar_autofree char *data = NULL;
	size_t len = 0;
	if (ar_read_file(src, BUNDLE_MAX, &data, &len, err) == -1)
		return ar_error_wrap(err, "secrets: the CA bundle");
	n->bundle_target = ar_xstrdup(target);
	if (ar_write_all(n->bundle_fd, data, len) == -1 ||
	    (len > 0 && data[len - 1] != '\n' && ar_write_all(n->bundle_fd, "\n", 1) == -1))
		return ar_error_make(err, errno, "secrets: write `%s`", n->bundle);
	return 0;
}

/* Before the network: a missing source fails before anything exists. */
int net_secrets_check(struct ar_net *n, ar_error_t *err)
{
	if (n->p->n_secrets > 0 && ar_secrets_new(n->p, &n->secrets, err) == -1)
		return -1;
	if (ar_secrets_kubeconfig(&n->secrets, n->p, &n->kube, err) == -1)
		return -1;
	return ar_secrets_check_sources(n->secrets, err);
}

static int state_file(struct ar_net *n, const char *name, char **path, int *fd, ar_error_t *err)
{
	*path = ar_xasprintf("%s/%s", ar_net_state_dir(n->state.name), name);
	*fd = open(*path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (*fd == -1)
		return ar_error_make(err, errno, "secrets: create `%s`", *path);
	return 0;
}

int net_secrets_bundle(struct ar_net *n, ar_error_t *err)
{
	if (n->secrets == NULL)
		return 0;
	const char *dir = ar_net_state_dir(n->state.name);
	if (net_mkdir_root(NULL, err) == -1)
		return -1;
	if (mkdir(dir, 0700) == -1 && errno != EEXIST)
		return ar_error_make(err, errno, "mkdir `%s`", dir);
	if (state_file(n, NET_CA_BUNDLE_FILE, &n->bundle, &n->bundle_fd, err) == -1)
		return -1;
	if (n->kube.server != NULL &&
	    state_file(n, NET_KUBECONFIG_FILE, &n->kubeconfig, &n->kubeconfig_fd, err) == -1)
		return -1;
	return write_roots(n, err);
}

/* The proxy serves and reported its CA: the bundle is complete before the command
 * starts. */
int net_secrets_ready(struct ar_net *n, ar_error_t *err)
{
	if (n->secrets == NULL)
		return 0;
	const char *pem = n->proxy.ca_pem;
	if (pem == NULL || strstr(pem, "-----BEGIN CERTIFICATE-----") == NULL)
		return ar_error_make(err, 0, "proxy: no sandbox CA came from it");
	if (ar_write_all(n->bundle_fd, pem, strlen(pem)) == -1)
		return ar_error_make(err, errno, "secrets: write `%s`", n->bundle);
	close(n->bundle_fd);
	n->bundle_fd = -1;
	if (n->kubeconfig_fd < 0)
		return 0;
	const struct ar_secret *x = &n->secrets->s[n->secrets->n - 1]; /* the kubeconfig's */
	ar_autobuf struct ar_buf kc = {0};
	ar_kubeconfig_render(&n->kube, x->placeholder, pem, &kc);
	if (ar_write_all(n->kubeconfig_fd, kc.data, kc.len) == -1)
		return ar_error_make(err, errno, "secrets: write `%s`", n->kubeconfig);
	close(n->kubeconfig_fd);
	n->kubeconfig_fd = -1;
	return 0;
}

void net_secrets_stop(struct ar_net *n)
{
	int *fds[] = {&n->bundle_fd, &n->kubeconfig_fd};
	for (size_t i = 0; i < AR_ARRAY_SIZE(fds); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
	if (n->kubeconfig)
		unlink(n->kubeconfig);
	if (n->bundle) {
		unlink(n->bundle);
		if (!n->state_written)
			rmdir(ar_net_state_dir(n->state.name));
	}
	free(n->bundle);
	free(n->bundle_target);
	free(n->kubeconfig);
	n->bundle = n->bundle_target = n->kubeconfig = NULL;
	ar_kubeconfig_free(&n->kube);
	ar_secrets_free(n->secrets);
	n->secrets = NULL;
}

const struct ar_secrets *ar_net_secrets(const struct ar_net *n)
{
	return n->secrets;
}

const char *ar_net_kubeconfig(const struct ar_net *n)
{
	return n->kubeconfig;
}

const char *ar_net_ca_bundle(const struct ar_net *n, const char **target)
{
	*target = n->bundle_target;
	return n->bundle;
}
