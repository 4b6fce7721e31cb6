/* agentrun-tls.so: TLS termination for the proxy with OpenSSL 3 (include/agentrun/
 * tlsmod.h). Loaded by the proxy only when the policy has secrets; nothing else of
 * agentrun links OpenSSL. The CA key is made here, lives in this process's memory
 * only and goes with the context (OpenSSL clears private key material when freed). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "agentrun/tlsmod.h"

#define LEAF_DAYS 30

struct leaf {
	struct leaf *next;
	X509 *cert;
	char host[];
};

struct ar_tlsmod_ctx {
	EVP_PKEY *ca_key;
	X509 *ca;
	EVP_PKEY *leaf_key; /* one key for every leaf of this run */
	SSL_CTX *server, *client;
	struct leaf *leaves;
};

struct ar_tlsmod_conn {
	SSL *ssl;
	char err[256];
};

static void say(char *err, size_t n, const char *what)
{
	unsigned long e = ERR_get_error();
	char lib[200] = "";
	if (e)
		ERR_error_string_n(e, lib, sizeof(lib));
	snprintf(err, n, "%s%s%s", what, e ? ": " : "", lib);
	ERR_clear_error();
}

static bool is_ip(const char *host)
{
	unsigned char b[16];
	return inet_pton(AF_INET, host, b) == 1 || inet_pton(AF_INET6, host, b) == 1;
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX v3;
	X509V3_set_ctx(&v3, issuer, cert, NULL, NULL, 0);
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
	if (ext == NULL)
		return -1;
	int r = X509_add_ext(cert, ext, -1) == 1 ? 0 : -1;
	X509_EXTENSION_free(ext);
	return r;
}

/* A certificate with a random serial, valid from an hour ago (clocks differ) for
 * `days`, subject CN=cn. */
static X509 *cert_new(const char *cn, EVP_PKEY *key, int days)
{
	X509 *x = X509_new();
	unsigned char serial[16];
	if (x == NULL || RAND_bytes(serial, sizeof(serial)) != 1)
		goto fail;
	serial[0] &= 0x7f; /* positive */
	BIGNUM *bn = BN_bin2bn(serial, sizeof(serial), NULL);
	int ok = bn != NULL && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
	BN_free(bn);
	if (!ok || X509_set_version(x, 2) != 1 ||
	    X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL ||
	    X509_time_adj_ex(X509_getm_notAfter(x), days, 0, NULL) == NULL ||
	    X509_set_pubkey(x, key) != 1)
		goto fail;
	X509_NAME *name = X509_get_subject_name(x);
	if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
				       0) != 1)
		goto fail;
	return x;
fail:
	X509_free(x);
	return NULL;
}

static int make_ca(struct ar_tlsmod_ctx *ctx, const char *cn)
{
	ctx->ca_key = EVP_EC_gen("P-256");
	ctx->leaf_key = EVP_EC_gen("P-256");
	if (ctx->ca_key == NULL || ctx->leaf_key == NULL)
		return -1;
	X509 *ca = cert_new(cn, ctx->ca_key, 3650);
	if (ca == NULL)
		return -1;
	ctx->ca = ca;
	if (X509_set_issuer_name(ca, X509_get_subject_name(ca)) != 1 ||
	    add_ext(ca, ca, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") == -1 ||
	    add_ext(ca, ca, NID_key_usage, "critical,keyCertSign,cRLSign") == -1 ||
	    add_ext(ca, ca, NID_subject_key_identifier, "hash") == -1 ||
	    X509_sign(ca, ctx->ca_key, EVP_sha256()) == 0)
		return -1;
	return 0;
}

static X509 *make_leaf(struct ar_tlsmod_ctx *ctx, const char *host)
{
	char san[300];
	X509 *x = cert_new(host, ctx->leaf_key, LEAF_DAYS);
	if (x == NULL)
		return NULL;
	snprintf(san, sizeof(san), "%s:%s", is_ip(host) ? "IP" : "DNS", host);
	if (X509_set_issuer_name(x, X509_get_subject_name(ctx->ca)) != 1 ||
	    add_ext(x, ctx->ca, NID_subject_alt_name, san) == -1 ||
	    add_ext(x, ctx->ca, NID_basic_constraints, "critical,CA:FALSE") == -1 ||
	    add_ext(x, ctx->ca, NID_key_usage, "critical,digitalSignature") == -1 ||
	    add_ext(x, ctx->ca, NID_ext_key_usage, "serverAuth") == -1 ||
	    add_ext(x, ctx->ca, NID_authority_key_identifier, "keyid:always") == -1 ||
	    X509_sign(x, ctx->ca_key, EVP_sha256()) == 0) {
		X509_free(x);
		return NULL;
	}
	return x;
}

/* Signed on first use, kept for the run. */
static X509 *leaf_for(struct ar_tlsmod_ctx *ctx, const char *host)
{
	for (struct leaf *l = ctx->leaves; l; l = l->next)
		if (strcmp(l->host, host) == 0)
			return l->cert;
	X509 *x = make_leaf(ctx, host);
	if (x == NULL)
		return NULL;
	size_t n = strlen(host) + 1;
	struct leaf *l = malloc(sizeof(*l) + n);
	if (l == NULL) {
		X509_free(x);
		return NULL;
	}
	memcpy(l->host, host, n);
	l->cert = x;
	l->next = ctx->leaves;
	ctx->leaves = l;
	return x;
}

static SSL_CTX *base_ctx(const SSL_METHOD *m)
{
	SSL_CTX *c = SSL_CTX_new(m);
	if (c == NULL)
		return NULL;
	SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
	/* the proxy's buffers move and its writes may be partial; a peer that closes
	 * without close_notify (close-delimited bodies) ends the stream, it is no error */
	SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_options(c, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
	/* one read(2) takes whatever the socket holds, not a record header and then its
	 * body: half the reads per request. The proxy reads until SSL wants the socket, so
	 * nothing waits in the read-ahead buffer unseen. */
	SSL_CTX_set_read_ahead(c, 1);
	return c;
}

/* Every certificate of a PEM text into the store; -1 when none was there. */
static int add_pem(X509_STORE *store, const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x;
	int n = 0;
	while (b != NULL && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		n += X509_STORE_add_cert(store, x) == 1;
		X509_free(x);
	}
	BIO_free(b);
	ERR_clear_error(); /* the end of the text */
	return n > 0 ? 0 : -1;
}

static int make_client(struct ar_tlsmod_ctx *ctx, const struct ar_tlsmod_opts *o, char *err,
		       size_t n)
{
	static const unsigned char alpn[] = "\x08http/1.1";
	ctx->client = base_ctx(TLS_client_method());
	if (ctx->client == NULL)
		return say(err, n, "TLS client context"), -1;
	X509_STORE *store = SSL_CTX_get_cert_store(ctx->client);
	if (o->trust_file && X509_STORE_load_file(store, o->trust_file) != 1) {
		char what[300];
		snprintf(what, sizeof(what), "the host trust store `%s`", o->trust_file);
		return say(err, n, what), -1;
	}
	if (o->upstream_ca && X509_STORE_load_file(store, o->upstream_ca) != 1) {
		char what[300];
		snprintf(what, sizeof(what), "proxy.upstream_ca `%s`", o->upstream_ca);
		return say(err, n, what), -1;
	}
	if (o->upstream_ca_pem && add_pem(store, o->upstream_ca_pem) == -1)
		return say(err, n, "the kubeconfig's certificate-authority"), -1;
	SSL_CTX_set_verify(ctx->client, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_alpn_protos(ctx->client, alpn, sizeof(alpn) - 1);
	return 0;
}

static void ctx_free(struct ar_tlsmod_ctx *ctx)
{
	if (ctx == NULL)
		return;
	while (ctx->leaves) {
		struct leaf *l = ctx->leaves;
		ctx->leaves = l->next;
		X509_free(l->cert);
		free(l);
	}
	SSL_CTX_free(ctx->server);
	SSL_CTX_free(ctx->client);
	X509_free(ctx->ca);
	EVP_PKEY_free(ctx->ca_key); /* cleared as it is freed */
	EVP_PKEY_free(ctx->leaf_key);
	free(ctx);
}

static struct ar_tlsmod_ctx *ctx_new(const struct ar_tlsmod_opts *o, char *err, size_t n)
{
	struct ar_tlsmod_ctx *ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL || OPENSSL_init_ssl(0, NULL) != 1) {
		snprintf(err, n, "TLS: initialisation failed");
		free(ctx);
		return NULL;
	}
	if (make_ca(ctx, o->ca_name ? o->ca_name : "agentrun sandbox CA") == -1) {
		say(err, n, "TLS: the sandbox CA");
		goto fail;
	}
	ctx->server = base_ctx(TLS_server_method());
	if (ctx->server == NULL) {
		say(err, n, "TLS server context");
		goto fail;
	}
	SSL_CTX_set_num_tickets(ctx->server, 0); /* nothing to resume across runs */
	if (make_client(ctx, o, err, n) == -1)
		goto fail;
	return ctx;
fail:
	ctx_free(ctx);
	return NULL;
}

static int ca_pem(struct ar_tlsmod_ctx *ctx, char *out, size_t size)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data = NULL;
	int r = -1;
	if (b != NULL && PEM_write_bio_X509(b, ctx->ca) == 1) {
		long len = BIO_get_mem_data(b, &data);
		if (len > 0 && (size_t)len < size) {
			memcpy(out, data, (size_t)len);
			out[len] = '\0';
			r = (int)len;
		}
	}
	BIO_free(b);
	return r;
}

static struct ar_tlsmod_conn *conn_new(SSL_CTX *sctx, int fd, char *err, size_t n)
{
	struct ar_tlsmod_conn *c = calloc(1, sizeof(*c));
	if (c == NULL || (c->ssl = SSL_new(sctx)) == NULL || SSL_set_fd(c->ssl, fd) != 1) {
		say(err, n, "TLS: a connection");
		if (c)
			SSL_free(c->ssl);
		free(c);
		return NULL;
	}
	return c;
}

static void conn_free(struct ar_tlsmod_conn *c)
{
	if (c == NULL)
		return;
	SSL_free(c->ssl);
	free(c);
}

static struct ar_tlsmod_conn *accept_new(struct ar_tlsmod_ctx *ctx, int fd, const char *host,
					 char *err, size_t n)
{
	X509 *leaf = leaf_for(ctx, host);
	if (leaf == NULL) {
		say(err, n, "TLS: a certificate for the host");
		return NULL;
	}
	struct ar_tlsmod_conn *c = conn_new(ctx->server, fd, err, n);
	if (c == NULL)
		return NULL;
	SSL_set_accept_state(c->ssl);
	if (SSL_use_certificate(c->ssl, leaf) != 1 ||
	    SSL_use_PrivateKey(c->ssl, ctx->leaf_key) != 1) {
		say(err, n, "TLS: the host's certificate");
		conn_free(c);
		return NULL;
	}
	return c;
}

static struct ar_tlsmod_conn *connect_new(struct ar_tlsmod_ctx *ctx, int fd, const char *host,
					  char *err, size_t n)
{
	struct ar_tlsmod_conn *c = conn_new(ctx->client, fd, err, n);
	if (c == NULL)
		return NULL;
	SSL_set_connect_state(c->ssl);
	int ok = is_ip(host) ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), host)
			     : SSL_set_tlsext_host_name(c->ssl, host) == 1 &&
				   SSL_set1_host(c->ssl, host) == 1;
	if (!ok) {
		say(err, n, "TLS: the upstream name");
		conn_free(c);
		return NULL;
	}
	return c;
}

/* The outcome of an SSL call that did not succeed: -1 with errno. */
static int failed(struct ar_tlsmod_conn *c, int r, int sys_errno)
{
	switch (SSL_get_error(c->ssl, r)) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SYSCALL:
		snprintf(c->err, sizeof(c->err), "%s",
			 sys_errno ? strerror(sys_errno) : "connection closed");
		ERR_clear_error();
		errno = sys_errno ? sys_errno : ECONNRESET;
		return -1;
	default: {
		long v = SSL_get_verify_result(c->ssl);
		if (v != X509_V_OK)
			snprintf(c->err, sizeof(c->err), "certificate verify failed: %s",
				 X509_verify_cert_error_string(v));
		else
			say(c->err, sizeof(c->err), "TLS error");
		ERR_clear_error();
		errno = EPROTO;
		return -1;
	}
	}
}

static int handshake(struct ar_tlsmod_conn *c)
{
	ERR_clear_error();
	errno = 0;
	int r = SSL_do_handshake(c->ssl);
	if (r == 1)
		return 0;
	int e = errno;
	if (failed(c, r, e) == 0) {
		snprintf(c->err, sizeof(c->err), "closed during the TLS handshake");
		errno = ECONNRESET;
	}
	return -1;
}

static ssize_t tread(struct ar_tlsmod_conn *c, void *buf, size_t n)
{
	size_t got = 0;
	ERR_clear_error();
	errno = 0;
	if (SSL_read_ex(c->ssl, buf, n, &got) == 1)
		return (ssize_t)got;
	int e = errno;
	return failed(c, 0, e);
}

static ssize_t twrite(struct ar_tlsmod_conn *c, const void *buf, size_t n)
{
	size_t put = 0;
	ERR_clear_error();
	errno = 0;
	if (SSL_write_ex(c->ssl, buf, n, &put) == 1)
		return (ssize_t)put;
	int e = errno;
	int r = failed(c, 0, e);
	if (r == 0) {
		errno = EPIPE;
		r = -1;
	}
	return r;
}

static size_t pending(struct ar_tlsmod_conn *c)
{
	return (size_t)SSL_pending(c->ssl);
}

static const char *server_name(struct ar_tlsmod_conn *c)
{
	return SSL_get_servername(c->ssl, TLSEXT_NAMETYPE_host_name);
}

static const char *error_text(struct ar_tlsmod_conn *c)
{
	return c->err[0] ? c->err : "TLS error";
}

static void close_notify(struct ar_tlsmod_conn *c)
{
	ERR_clear_error();
	if (SSL_is_init_finished(c->ssl))
		SSL_shutdown(c->ssl);
	ERR_clear_error();
}

__attribute__((visibility("default"))) const struct ar_tlsmod_ops ar_tlsmod_ops = {
    .abi = AR_TLSMOD_ABI,
    .ctx_new = ctx_new,
    .ctx_free = ctx_free,
    .ca_pem = ca_pem,
    .accept_new = accept_new,
    .connect_new = connect_new,
    .handshake = handshake,
    .read = tread,
    .write = twrite,
    .pending = pending,
    .server_name = server_name,
    .error = error_text,
    .close_notify = close_notify,
    .conn_free = conn_free,
};
