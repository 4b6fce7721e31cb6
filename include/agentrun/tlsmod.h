/* The TLS module (src/tlsmod, built as agentrun-tls.so against OpenSSL 3): what the
 * proxy needs to terminate HTTPS to a secret's hosts. agentrun itself never links
 * OpenSSL: the proxy dlopen()s the module only when the policy has secrets
 * (src/proxy/tlsio.c), so a start without secrets loads neither libssl nor libcrypto.
 *
 * One context per proxy: a fresh CA (EC P-256 key in the proxy's memory only, a
 * self-signed certificate valid for the run), one leaf key, leaves signed on demand
 * per host and cached, a server SSL_CTX for the sandbox side and a client SSL_CTX for
 * the upstream side verifying against the host trust store (+ proxy.upstream_ca) with
 * the host name checked. Connections are non-blocking SSL objects on the proxy's own
 * sockets: read/write/handshake return -1 with errno EAGAIN when they must wait. */
#ifndef AGENTRUN_TLSMOD_H
#define AGENTRUN_TLSMOD_H

#include <stddef.h>
#include <sys/types.h>

#define AR_TLSMOD_ABI	 1
#define AR_TLSMOD_SYMBOL "ar_tlsmod_ops"
#define AR_TLSMOD_NAME	 "agentrun-tls.so"

struct ar_tlsmod_ctx;
struct ar_tlsmod_conn;

struct ar_tlsmod_opts {
	const char *trust_file;	     /* the host's CA bundle (loaded now, read once) */
	const char *upstream_ca;     /* more CAs for the upstream leg, or NULL */
	const char *upstream_ca_pem; /* and more in memory (a kubeconfig's cluster CA), or NULL */
	const char *ca_name;	     /* the CA's common name */
};

struct ar_tlsmod_ops {
	int abi; /* AR_TLSMOD_ABI */
	/* NULL with a message in err on failure. */
	struct ar_tlsmod_ctx *(*ctx_new)(const struct ar_tlsmod_opts *o, char *err, size_t n);
	void (*ctx_free)(struct ar_tlsmod_ctx *ctx);
	/* The CA certificate in PEM; its length, or -1 when it does not fit. */
	int (*ca_pem)(struct ar_tlsmod_ctx *ctx, char *out, size_t size);
	/* Server side (the sandbox's client): a leaf for `host` (a name or an IP literal). */
	struct ar_tlsmod_conn *(*accept_new)(struct ar_tlsmod_ctx *ctx, int fd, const char *host,
					     char *err, size_t n);
	/* Client side (the origin): SNI and the verified name are `host`. */
	struct ar_tlsmod_conn *(*connect_new)(struct ar_tlsmod_ctx *ctx, int fd, const char *host,
					      char *err, size_t n);
	/* 0 done, -1 with errno EAGAIN (wait for the socket) or another errno (failed:
	 * `error` says why). */
	int (*handshake)(struct ar_tlsmod_conn *c);
	/* > 0 bytes, 0 at a clean close, -1 with errno (EAGAIN: wait). */
	ssize_t (*read)(struct ar_tlsmod_conn *c, void *buf, size_t n);
	ssize_t (*write)(struct ar_tlsmod_conn *c, const void *buf, size_t n);
	/* Decrypted bytes already held inside (read them before waiting on the socket). */
	size_t (*pending)(struct ar_tlsmod_conn *c);
	/* The client's SNI (server side), or NULL. */
	const char *(*server_name)(struct ar_tlsmod_conn *c);
	/* Why the last call failed (the certificate check, the library's reason). */
	const char *(*error)(struct ar_tlsmod_conn *c);
	/* close_notify, best effort (never waits). */
	void (*close_notify)(struct ar_tlsmod_conn *c);
	void (*conn_free)(struct ar_tlsmod_conn *c);
};

#endif
