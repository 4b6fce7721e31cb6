/* Socket I/O of clients and upstreams, plain or through TLS, and the TLS module
 * (agentrun-tls.so, include/agentrun/tlsmod.h) loaded with dlopen() only when a
 * policy has secrets: the proxy's binary never links OpenSSL, so a start without
 * secrets does not pay for loading it. Everything above this file reads and writes a
 * client or upstream through cio_* and uio_*, which answer like recv/send (-1 with
 * EAGAIN when they must wait), whether or not the connection is terminated. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agentrun/tlsmod.h"
#include "internal.h"

struct ar_proxy_tls {
	void *dl;
	const struct ar_tlsmod_ops *ops;
	struct ar_tlsmod_ctx *ctx;
};

/* Where distributions keep the bundle of trusted roots (Debian/Ubuntu/Alpine/Arch,
 * Fedora/RHEL, openSUSE, macOS-style). */
static const char *const bundles[] = {
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
};

const char *ar_proxy_tls_host_bundle(const char *root)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(bundles); i++) {
		ar_autofree char *path =
		    ar_xasprintf("%s%s", root && strcmp(root, "/") != 0 ? root : "", bundles[i]);
		if (access(path, R_OK) == 0)
			return bundles[i];
	}
	return NULL;
}

/* Beside the binary (the build tree), then ../lib/agentrun (the install prefix), then
 * the build tree seen from tests/. */
static void *open_module(ar_error_t *err)
{
	static const char *const rel[] = {"/", "/../lib/agentrun/", "/../"};
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return ar_error_make(err, errno, "secrets: readlink /proc/self/exe"), NULL;
	exe[n] = '\0';
	const char *dir = dirname(exe);
	ar_autobuf struct ar_buf tried = {0};
	for (size_t i = 0; i < AR_ARRAY_SIZE(rel); i++) {
		ar_autofree char *path = ar_xasprintf("%s%s%s", dir, rel[i], AR_TLSMOD_NAME);
		if (access(path, R_OK) != 0) {
			ar_buf_printf(&tried, "%s%s", tried.len ? ", " : "", path);
			continue;
		}
		void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (dl == NULL)
			return ar_error_make(err, 0, "secrets: load %s: %s", path, dlerror()), NULL;
		return dl;
	}
	return ar_error_make(err, 0, "secrets: the TLS module %s is not installed (looked for %s)",
			     AR_TLSMOD_NAME, tried.data),
	       NULL;
}

int ar_proxy_tls_prepare(const char *upstream_ca, const char *upstream_ca_pem, const char *ca_name,
			 struct ar_proxy_tls **out, ar_error_t *err)
{
	char msg[512] = "";
	*out = NULL;
	struct ar_proxy_tls *t = ar_xcalloc(1, sizeof(*t));
	if ((t->dl = open_module(err)) == NULL)
		goto fail;
	t->ops = dlsym(t->dl, AR_TLSMOD_SYMBOL);
	if (t->ops == NULL || t->ops->abi != AR_TLSMOD_ABI) {
		ar_error_make(err, 0, "secrets: %s is from another agentrun build", AR_TLSMOD_NAME);
		goto fail;
	}
	struct ar_tlsmod_opts o = {
	    .trust_file = ar_proxy_tls_host_bundle("/"),
	    .upstream_ca = upstream_ca,
	    .upstream_ca_pem = upstream_ca_pem,
	    .ca_name = ca_name,
	};
	if ((t->ctx = t->ops->ctx_new(&o, msg, sizeof(msg))) == NULL) {
		ar_error_make(err, 0, "secrets: %s", msg);
		goto fail;
	}
	*out = t;
	return 0;
fail:
	ar_proxy_tls_free(t);
	return -1;
}

int ar_proxy_tls_ca_pem(const struct ar_proxy_tls *t, char *out, size_t size)
{
	return t->ops->ca_pem(t->ctx, out, size);
}

void ar_proxy_tls_free(struct ar_proxy_tls *t)
{
	if (t == NULL)
		return;
	if (t->ops && t->ctx)
		t->ops->ctx_free(t->ctx);
	/* the module stays mapped: OpenSSL's atexit handlers live in it */
	free(t);
}

/* ---- connections ---- */

int tlsio_accept(struct client *c, const char *host, char *why, size_t n)
{
	struct ar_proxy_tls *t = c->px->cfg.tls;
	c->tls = t->ops->accept_new(t->ctx, c->fd, host, why, n);
	return c->tls ? 0 : -1;
}

int tlsio_connect(struct upstream *up, const char *host, char *why, size_t n)
{
	struct ar_proxy_tls *t = up->px->cfg.tls;
	up->tls = t->ops->connect_new(t->ctx, up->fd, host, why, n);
	return up->tls ? 0 : -1;
}

int tlsio_handshake(struct ar_proxy *px, struct ar_tlsmod_conn *tc)
{
	return px->cfg.tls->ops->handshake(tc);
}

const char *tlsio_error(struct ar_proxy *px, struct ar_tlsmod_conn *tc)
{
	return px->cfg.tls->ops->error(tc);
}

const char *tlsio_server_name(struct ar_proxy *px, struct ar_tlsmod_conn *tc)
{
	return px->cfg.tls->ops->server_name(tc);
}

void tlsio_free(struct ar_proxy *px, struct ar_tlsmod_conn **tc)
{
	if (*tc == NULL)
		return;
	px->cfg.tls->ops->close_notify(*tc);
	px->cfg.tls->ops->conn_free(*tc);
	*tc = NULL;
}

ssize_t cio_recv(struct client *c, void *buf, size_t n)
{
	if (c->tls)
		return c->px->cfg.tls->ops->read(c->tls, buf, n);
	return recv(c->fd, buf, n, 0);
}

ssize_t cio_send(struct client *c, const void *buf, size_t n)
{
	if (c->tls)
		return c->px->cfg.tls->ops->write(c->tls, buf, n);
	return send(c->fd, buf, n, MSG_NOSIGNAL);
}

ssize_t uio_recv(struct upstream *up, void *buf, size_t n)
{
	if (up->tls)
		return up->px->cfg.tls->ops->read(up->tls, buf, n);
	return recv(up->fd, buf, n, 0);
}

ssize_t uio_send(struct upstream *up, const void *buf, size_t n)
{
	if (up->tls)
		return up->px->cfg.tls->ops->write(up->tls, buf, n);
	return send(up->fd, buf, n, MSG_NOSIGNAL);
}

/* An idle pooled TLS upstream woke: a session ticket or a close_notify is read and
 * dropped; 0 when it is still usable (nothing but TLS housekeeping arrived). */
int uio_idle_check(struct upstream *up)
{
	char b[512];
	ssize_t r = up->px->cfg.tls->ops->read(up->tls, b, sizeof(b));
	return r == -1 && errno == EAGAIN ? 0 : -1;
}
