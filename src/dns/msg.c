/* DNS messages (RFC 1035, RFC 6891): parse a query and build the reply, both over
 * plain buffers. The parser is strict on purpose: the stub only ever needs one
 * question, so anything else in a query is FORMERR rather than more code to trust. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "agentrun/dns.h"
#include "agentrun/util.h"

#define HDR_LEN	      12
#define F_QR	      0x8000
#define F_OPCODE      0x7800
#define F_AA	      0x0400
#define F_RD	      0x0100
#define F_RA	      0x0080
#define F_CD	      0x0010
#define EDNS_UDP_SIZE 1232 /* the size DNS flag day 2020 settled on */

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint8_t *put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return p + 2;
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	p = put16(p, (uint16_t)(v >> 16));
	return put16(p, (uint16_t)v);
}

static bool host_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Append one label to the presentation form; bytes a host name cannot hold are
 * escaped (\DDD, \.) so the audit shows exactly what was asked. */
static size_t present_label(const uint8_t *l, size_t n, char *out, size_t pos, bool *host)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = l[i];
		if (c >= 'A' && c <= 'Z')
			c = (unsigned char)(c - 'A' + 'a');
		if (!host_char(c))
			*host = false;
		if (c > ' ' && c < 0x7f && c != '.' && c != '\\')
			out[pos++] = (char)c;
		else if (c == '.' || c == '\\')
			pos += (size_t)sprintf(out + pos, "\\%c", c);
		else
			pos += (size_t)sprintf(out + pos, "\\%03u", c);
	}
	return pos;
}

/* The question name at buf[*off]: plain labels only, 255 wire bytes at most. Worst
 * case 255 wire bytes give 4 * 254 presentation bytes, which AR_DNS_NAME_MAX holds. */
static int parse_qname(const uint8_t *buf, size_t len, size_t *off, struct ar_dns_query *q)
{
	size_t o = *off, pos = 0;
	bool host = true;
	for (;;) {
		if (o >= len)
			return (q->why = "truncated question name"), -1;
		uint8_t n = buf[o];
		if ((n & 0xc0) == 0xc0)
			return (q->why = "compression pointer in the question"), -1;
		if ((n & 0xc0) != 0)
			return (q->why = "unknown label type"), -1;
		if (o - *off + 1 + n > sizeof(q->qname_wire))
			return (q->why = "name longer than 255 bytes"), -1;
		if (o + 1 + n > len)
			return (q->why = "truncated label"), -1;
		if (n == 0)
			break;
		if (pos > 0)
			q->name[pos++] = '.';
		pos = present_label(buf + o + 1, n, q->name, pos, &host);
		o += 1 + (size_t)n;
	}
	o++;
	q->qname_wire_len = o - *off;
	memcpy(q->qname_wire, buf + *off, q->qname_wire_len);
	q->name[pos] = '\0';
	q->host_name = host && pos > 0;
	*off = o;
	return 0;
}

/* The one record allowed after the question: an OPT pseudo-record (EDNS), owned by
 * the root name. Its options (cookies, padding, client subnet) are skipped unread. */
static int parse_opt(const uint8_t *buf, size_t len, size_t *off, struct ar_dns_query *q)
{
	size_t o = *off;
	if (o + 11 > len || buf[o] != 0 || get16(buf + o + 1) != AR_DNS_T_OPT)
		return (q->why = "an additional record that is not EDNS OPT"), -1;
	size_t rdlen = get16(buf + o + 9);
	if (o + 11 + rdlen > len)
		return (q->why = "truncated OPT record"), -1;
	q->edns = true;
	*off = o + 11 + rdlen;
	return 0;
}

static enum ar_dns_parse formerr(struct ar_dns_query *q, const char *why)
{
	if (why != NULL)
		q->why = why;
	return AR_DNS_PARSE_FORMERR;
}

enum ar_dns_parse ar_dns_parse_query(const uint8_t *buf, size_t len, struct ar_dns_query *q)
{
	memset(q, 0, sizeof(*q));
	if (buf == NULL || len < HDR_LEN)
		return AR_DNS_PARSE_DROP;
	q->id = get16(buf);
	q->flags = get16(buf + 2);
	/* a response is never answered: two stubs must not ping-pong */
	if (q->flags & F_QR)
		return AR_DNS_PARSE_DROP;
	if ((q->flags & F_OPCODE) != 0) {
		q->why = "only standard queries are answered";
		return AR_DNS_PARSE_NOTIMP;
	}
	if (get16(buf + 4) != 1)
		return formerr(q, "not exactly one question");
	if (get16(buf + 6) != 0 || get16(buf + 8) != 0)
		return formerr(q, "answer or authority records in a query");
	uint16_t arcount = get16(buf + 10);
	if (arcount > 1)
		return formerr(q, "more than one additional record");
	size_t off = HDR_LEN;
	if (parse_qname(buf, len, &off, q) == -1)
		return formerr(q, NULL);
	if (off + 4 > len)
		return formerr(q, "truncated question");
	q->qtype = get16(buf + off);
	q->qclass = get16(buf + off + 2);
	q->has_question = true;
	off += 4;
	if (arcount == 1 && parse_opt(buf, len, &off, q) == -1)
		return formerr(q, NULL);
	if (off != len)
		return formerr(q, "trailing bytes after the query");
	return AR_DNS_PARSE_OK;
}

/* A presentation name (LDH labels, no escapes) to wire form; 0 when it is not one. */
static size_t name_to_wire(const char *name, uint8_t *out, size_t cap)
{
	size_t o = 0, len = strlen(name);
	if (len == 0 || len > 253 || cap < len + 2)
		return 0;
	const char *p = name;
	while (*p != '\0') {
		const char *dot = strchr(p, '.');
		size_t n = dot != NULL ? (size_t)(dot - p) : strlen(p);
		if (n == 0 || n > 63)
			return 0;
		out[o++] = (uint8_t)n;
		memcpy(out + o, p, n);
		o += n;
		p += n + (dot != NULL);
		if (dot != NULL && *p == '\0')
			return 0;
	}
	out[o++] = 0;
	return o;
}

static uint8_t *put_header(const struct ar_dns_query *q, const struct ar_dns_answer *a, uint8_t *p)
{
	/* AA: the stub is the authority on what the sandbox may resolve; RA so that
	 * stub resolvers do not warn; RD and CD echo the query. */
	uint16_t flags = F_QR | F_AA | F_RA | (q->flags & (F_RD | F_CD)) | (uint16_t)a->rcode;
	p = put16(p, q->id);
	p = put16(p, flags);
	p = put16(p, q->has_question ? 1 : 0);
	p = put16(p, a->type != 0 && q->has_question ? 1 : 0);
	p = put16(p, 0);
	return put16(p, q->edns ? 1 : 0);
}

size_t ar_dns_build_reply(const struct ar_dns_query *q, const struct ar_dns_answer *a, uint8_t *out,
			  size_t cap)
{
	uint8_t ptr_wire[256];
	size_t ptr_len = 0, need = HDR_LEN;
	if (q->has_question)
		need += q->qname_wire_len + 4;
	if (a->type == AR_DNS_T_A)
		need += 12 + 4;
	if (a->type == AR_DNS_T_PTR) {
		ptr_len =
		    a->ptr_name != NULL ? name_to_wire(a->ptr_name, ptr_wire, sizeof(ptr_wire)) : 0;
		if (ptr_len == 0)
			return 0;
		need += 12 + ptr_len;
	}
	if (q->edns)
		need += 11;
	if (need > cap || (a->type != 0 && !q->has_question))
		return 0;
	uint8_t *p = put_header(q, a, out);
	if (q->has_question) {
		memcpy(p, q->qname_wire, q->qname_wire_len);
		p = put16(p + q->qname_wire_len, q->qtype);
		p = put16(p, q->qclass);
	}
	if (a->type != 0) {
		p = put16(p, 0xc000 | HDR_LEN); /* the owner is the question's name */
		p = put16(p, a->type);
		p = put16(p, AR_DNS_CLASS_IN);
		p = put32(p, a->ttl);
		if (a->type == AR_DNS_T_A) {
			p = put16(p, 4);
			memcpy(p, &a->a.s_addr, 4);
			p += 4;
		} else {
			p = put16(p, (uint16_t)ptr_len);
			memcpy(p, ptr_wire, ptr_len);
			p += ptr_len;
		}
	}
	if (q->edns) {
		*p++ = 0; /* root owner, then type, class = our UDP size, ttl = 0, rdlen = 0 */
		p = put16(p, AR_DNS_T_OPT);
		p = put16(p, EDNS_UDP_SIZE);
		p = put32(p, 0);
		p = put16(p, 0);
	}
	return (size_t)(p - out);
}

size_t ar_dns_build_query(uint16_t id, const char *name, uint16_t qtype, uint8_t *out, size_t cap)
{
	uint8_t wire[256];
	size_t n = *name == '\0' ? (wire[0] = 0, 1) : name_to_wire(name, wire, sizeof(wire));
	if (n == 0 || cap < HDR_LEN + n + 4)
		return 0;
	uint8_t *p = put16(out, id);
	p = put16(p, F_RD);
	p = put16(p, 1);
	p = put16(p, 0);
	p = put16(p, 0);
	p = put16(p, 0);
	memcpy(p, wire, n);
	p = put16(p + n, qtype);
	p = put16(p, AR_DNS_CLASS_IN);
	return (size_t)(p - out);
}

int ar_dns_tcp_frame(const uint8_t *buf, size_t len, size_t max, const uint8_t **msg,
		     size_t *msg_len)
{
	if (len < 2)
		return 0;
	size_t n = get16(buf);
	if (n == 0 || n > max)
		return -1;
	if (len < 2 + n)
		return 0;
	*msg = buf + 2;
	*msg_len = n;
	return 1;
}

void ar_dns_tcp_prefix(size_t len, uint8_t out[2])
{
	put16(out, (uint16_t)len);
}

static const struct {
	uint16_t type;
	const char *name;
} type_names[] = {
    {AR_DNS_T_A, "A"},	   {AR_DNS_T_NS, "NS"},	      {AR_DNS_T_CNAME, "CNAME"},
    {AR_DNS_T_SOA, "SOA"}, {AR_DNS_T_PTR, "PTR"},     {AR_DNS_T_MX, "MX"},
    {AR_DNS_T_TXT, "TXT"}, {AR_DNS_T_AAAA, "AAAA"},   {AR_DNS_T_SRV, "SRV"},
    {AR_DNS_T_OPT, "OPT"}, {AR_DNS_T_HTTPS, "HTTPS"}, {AR_DNS_T_ANY, "ANY"},
};

const char *ar_dns_type_name(uint16_t qtype, char *buf, size_t size)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(type_names); i++)
		if (type_names[i].type == qtype)
			return type_names[i].name;
	snprintf(buf, size, "TYPE%u", qtype);
	return buf;
}

static const char *const rcode_names[] = {"NOERROR",  "FORMERR", "SERVFAIL",
					  "NXDOMAIN", "NOTIMP",	 "REFUSED"};

const char *ar_dns_rcode_name(int rcode)
{
	if (rcode >= 0 && (size_t)rcode < AR_ARRAY_SIZE(rcode_names))
		return rcode_names[rcode];
	return rcode < 0 ? "DROPPED" : "RCODE?";
}
