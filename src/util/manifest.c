/* The manifest reader for `check --manifest`, and the kubeconfig reader: JSON, or a YAML stream of
 * block mappings and sequences with plain, quoted and literal/folded (| >) scalars, flow
 * collections on one line, comments and `---` documents: what `render --format k8s` writes and what
 * people write by hand. Anchors, aliases, tags and multi-line plain or flow scalars
 * are refused by name rather than misread. Pure over the buffer; builds cJSON. */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agentrun/manifest.h"
#include "agentrun/util.h"

#define MAX_DEPTH 64

struct line {
	int indent;
	int no;		 /* 1-based line number */
	char *text;	 /* from the first non-space byte, comment and trailing space removed */
	const char *raw; /* the whole line, for block scalars */
	size_t raw_len;
};

struct yr {
	struct line *lines;
	size_t n, pos;
	const char *origin;
	ar_error_t *err;
	int depth;
};

static int yerr(struct yr *y, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int yerr(struct yr *y, int line, const char *fmt, ...)
{
	va_list ap;
	ar_autobuf struct ar_buf b = {0};
	va_start(ap, fmt);
	ar_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (*y->err == NULL)
		ar_error_make(y->err, 0, "%s:%d: %s", y->origin, line, b.data);
	return -1;
}

/* Where a comment starts: '#' at the start or after a space, outside quotes. */
static size_t comment_start(const char *s, size_t n)
{
	char q = 0;
	for (size_t i = 0; i < n; i++) {
		if (q != 0) {
			if (s[i] == '\\' && q == '"' && i + 1 < n)
				i++;
			else if (s[i] == q)
				q = 0;
		} else if (s[i] == '"' || s[i] == '\'') {
			if (i == 0 || strchr(" [{,:-", s[i - 1]) != NULL)
				q = s[i];
		} else if (s[i] == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) {
			return i;
		}
	}
	return n;
}

static void split_lines(struct yr *y, const char *text, size_t len)
{
	size_t cap = 0;
	int no = 0;
	for (size_t off = 0; off < len;) {
		const char *s = text + off;
		const char *nl = memchr(s, '\n', len - off);
		size_t n = nl != NULL ? (size_t)(nl - s) : len - off;
		off += n + (nl != NULL);
		no++;
		if (n > 0 && s[n - 1] == '\r')
			n--;
		size_t ind = 0;
		while (ind < n && s[ind] == ' ')
			ind++;
		size_t end = ind + comment_start(s + ind, n - ind);
		while (end > ind && (s[end - 1] == ' ' || s[end - 1] == '\t'))
			end--;
		if (y->n == cap) {
			cap = cap ? cap * 2 : 64;
			y->lines = ar_xrealloc(y->lines, cap * sizeof(*y->lines));
		}
		/* blank and comment-only lines are kept (empty text): block scalars need them */
		y->lines[y->n++] = (struct line){.indent = (int)ind,
						 .no = no,
						 .text = ar_xstrndup(s + ind, end - ind),
						 .raw = s,
						 .raw_len = n};
	}
}

static bool blank(const struct line *l)
{
	return l->text[0] == '\0';
}

static void skip_blank(struct yr *y)
{
	while (y->pos < y->n && blank(&y->lines[y->pos]))
		y->pos++;
}

static bool is_doc_marker(const struct line *l)
{
	return l->indent == 0 && (strcmp(l->text, "---") == 0 || strncmp(l->text, "--- ", 4) == 0 ||
				  strcmp(l->text, "...") == 0);
}

/* ---- scalars ---- */

static int utf8_put(struct ar_buf *b, unsigned long cp)
{
	if (cp < 0x80) {
		ar_buf_putc(b, (char)cp);
	} else if (cp < 0x800) {
		ar_buf_putc(b, (char)(0xc0 | (cp >> 6)));
		ar_buf_putc(b, (char)(0x80 | (cp & 0x3f)));
	} else if (cp < 0x10000) {
		ar_buf_putc(b, (char)(0xe0 | (cp >> 12)));
		ar_buf_putc(b, (char)(0x80 | ((cp >> 6) & 0x3f)));
		ar_buf_putc(b, (char)(0x80 | (cp & 0x3f)));
	} else if (cp < 0x110000) {
		ar_buf_putc(b, (char)(0xf0 | (cp >> 18)));
		ar_buf_putc(b, (char)(0x80 | ((cp >> 12) & 0x3f)));
		ar_buf_putc(b, (char)(0x80 | ((cp >> 6) & 0x3f)));
		ar_buf_putc(b, (char)(0x80 | (cp & 0x3f)));
	} else {
		return -1;
	}
	return 0;
}

static const struct {
	char c;
	char v;
} dq_escapes[] = {{'n', '\n'}, {'t', '\t'}, {'r', '\r'}, {'"', '"'},  {'\\', '\\'},
		  {'/', '/'},  {'0', '\0'}, {'b', '\b'}, {'f', '\f'}, {' ', ' '}};

/* One escape after a backslash at s; returns the bytes consumed or -1. */
static int dq_escape(const char *s, struct ar_buf *b)
{
	for (size_t i = 0; i < AR_ARRAY_SIZE(dq_escapes); i++)
		if (*s == dq_escapes[i].c && dq_escapes[i].v != '\0') {
			ar_buf_putc(b, dq_escapes[i].v);
			return 1;
		}
	int digits = *s == 'x' ? 2 : *s == 'u' ? 4 : *s == 'U' ? 8 : 0;
	if (digits == 0)
		return -1;
	unsigned long cp = 0;
	for (int i = 1; i <= digits; i++) {
		int v = ar_hexval((unsigned char)s[i]);
		if (v < 0)
			return -1;
		cp = cp * 16 + (unsigned long)v;
	}
	/* a NUL would cut the string short in every C consumer: refuse it */
	if (cp == 0 || utf8_put(b, cp) < 0)
		return -1;
	return digits + 1;
}

/* A quoted scalar starting at s[0] (the quote); *end gets the byte after it. */
static char *quoted(struct yr *y, int line, const char *s, const char **end)
{
	ar_autobuf struct ar_buf b = {0};
	char q = s[0];
	const char *p = s + 1;
	for (;; p++) {
		if (*p == '\0') {
			yerr(y, line,
			     "unterminated %s-quoted string (multi-line quoted scalars are "
			     "not supported)",
			     q == '"' ? "double" : "single");
			return NULL;
		}
		if (q == '\'' && p[0] == '\'' && p[1] == '\'') {
			ar_buf_putc(&b, '\'');
			p++;
		} else if (*p == q) {
			break;
		} else if (q == '"' && *p == '\\') {
			int n = dq_escape(p + 1, &b);
			if (n < 0) {
				yerr(y, line, "bad escape `\\%c` in a double-quoted string", p[1]);
				return NULL;
			}
			p += n;
		} else {
			ar_buf_putc(&b, *p);
		}
	}
	*end = p + 1;
	ar_buf_reserve(&b, 0);
	return ar_buf_steal(&b);
}

static bool is_int(const char *s)
{
	const char *p = s + (*s == '-' || *s == '+');
	if (!isdigit((unsigned char)*p))
		return false;
	while (isdigit((unsigned char)*p))
		p++;
	return *p == '\0';
}

static bool is_float(const char *s)
{
	char *end;
	errno = 0;
	if (!isdigit((unsigned char)s[*s == '-' || *s == '+']) && s[*s == '-'] != '.')
		return false;
	strtod(s, &end);
	return *end == '\0' && errno == 0;
}

/* Plain scalars resolved as sigs.k8s.io/yaml (YAML 1.1) would: null, booleans
 * including yes/no/on/off, numbers; anything else is a string. */
static cJSON *plain(const char *s)
{
	static const char *const nulls[] = {"null", "Null", "NULL", "~", ""};
	static const char *const trues[] = {"true", "yes", "on", "y"};
	static const char *const falses[] = {"false", "no", "off", "n"};
	for (size_t i = 0; i < AR_ARRAY_SIZE(nulls); i++)
		if (strcmp(s, nulls[i]) == 0)
			return cJSON_CreateNull();
	for (size_t i = 0; i < AR_ARRAY_SIZE(trues); i++) {
		if (strcasecmp(s, trues[i]) == 0)
			return cJSON_CreateTrue();
		if (strcasecmp(s, falses[i]) == 0)
			return cJSON_CreateFalse();
	}
	if (is_int(s) || is_float(s))
		return cJSON_CreateNumber(strtod(s, NULL));
	return cJSON_CreateString(s);
}

static cJSON *flow(struct yr *y, int line, const char **s);

/* A flow-context scalar: quoted, or plain up to , ] } */
static cJSON *flow_scalar(struct yr *y, int line, const char **s)
{
	if (**s == '"' || **s == '\'') {
		ar_autofree char *v = quoted(y, line, *s, s);
		return v != NULL ? cJSON_CreateString(v) : NULL;
	}
	const char *start = *s;
	while (**s && strchr(",]}", **s) == NULL && !(**s == ':' && (*s)[1] == ' '))
		(*s)++;
	const char *e = *s;
	while (e > start && e[-1] == ' ')
		e--;
	ar_autofree char *v = ar_xstrndup(start, (size_t)(e - start));
	return plain(v);
}

static void skip_sp(const char **s)
{
	while (**s == ' ')
		(*s)++;
}

static cJSON *flow_item(struct yr *y, int line, const char **s)
{
	skip_sp(s);
	return **s == '[' || **s == '{' ? flow(y, line, s) : flow_scalar(y, line, s);
}

/* [a, b] or {k: v, ...} on one line. */
static cJSON *flow(struct yr *y, int line, const char **s)
{
	char close = **s == '[' ? ']' : '}';
	cJSON *out = close == ']' ? cJSON_CreateArray() : cJSON_CreateObject();
	if (++y->depth > MAX_DEPTH)
		goto fail_depth;
	(*s)++;
	for (skip_sp(s); **s != close;) {
		cJSON *key = close == '}' ? flow_item(y, line, s) : NULL;
		if (close == '}' && (key == NULL || !cJSON_IsString(key) || **s != ':')) {
			cJSON_Delete(key);
			goto fail;
		}
		if (close == '}')
			(*s)++;
		cJSON *v = flow_item(y, line, s);
		if (v == NULL) {
			cJSON_Delete(key);
			goto fail;
		}
		if (key != NULL) {
			cJSON_AddItemToObject(out, key->valuestring, v);
			cJSON_Delete(key);
		} else {
			cJSON_AddItemToArray(out, v);
		}
		skip_sp(s);
		if (**s == ',')
			(*s)++, skip_sp(s);
		else if (**s != close)
			goto fail;
	}
	(*s)++;
	y->depth--;
	return out;
fail:
	yerr(y, line, "flow collection: expected `%c` (flow collections must fit on one line)",
	     close);
	cJSON_Delete(out);
	return NULL;
fail_depth:
	yerr(y, line, "nested deeper than %d", MAX_DEPTH);
	cJSON_Delete(out);
	return NULL;
}

/* ---- block structure ---- */

static cJSON *node(struct yr *y);

static bool is_seq_line(const struct line *l)
{
	return l->text[0] == '-' && (l->text[1] == '\0' || l->text[1] == ' ');
}

/* For "key: rest" and "key:" return the key (unquoted) and point *rest past ": ". */
static char *split_key(struct yr *y, const struct line *l, const char **rest, bool *bad)
{
	const char *t = l->text, *after;
	char *key;
	*bad = false;
	if (*t == '"' || *t == '\'') {
		key = quoted(y, l->no, t, &after);
		if (key == NULL) {
			*bad = true;
			return NULL;
		}
		if (*after != ':' || (after[1] != ' ' && after[1] != '\0')) {
			free(key);
			return NULL;
		}
	} else {
		if (*t == '[' || *t == '{' || *t == '&' || *t == '*' || *t == '!' || *t == '?')
			return NULL;
		const char *c = strstr(t, ": ");
		size_t n = strlen(t);
		if (c == NULL && n > 0 && t[n - 1] == ':')
			c = t + n - 1;
		if (c == NULL || c == t)
			return NULL;
		key = ar_xstrndup(t, (size_t)(c - t));
		after = c;
	}
	after++;
	skip_sp(&after);
	*rest = after;
	return key;
}

static int block_header(struct yr *y, int line, const char *h, char *chomp)
{
	*chomp = 'c';
	for (h++; *h; h++) {
		if (*h == '-' || *h == '+')
			*chomp = *h;
		else
			return yerr(y, line,
				    "block scalar header `%s`: only | > |- >- |+ >+ are "
				    "supported",
				    h);
	}
	return 0;
}

/* | and > scalars: the more-indented lines after the key, by their raw text. */
static cJSON *block_scalar(struct yr *y, int parent, const char *header, int line)
{
	char chomp;
	if (block_header(y, line, header, &chomp) < 0)
		return NULL;
	ar_autobuf struct ar_buf b = {0};
	int content = -1;
	size_t trailing = 0; /* newlines not yet written (chomping decides) */
	for (; y->pos < y->n; y->pos++) {
		const struct line *l = &y->lines[y->pos];
		bool empty = l->indent >= (int)l->raw_len;
		if (!empty && l->indent <= parent)
			break;
		if (empty) {
			trailing++;
			continue;
		}
		if (content < 0)
			content = l->indent;
		if (l->indent < content)
			return yerr(y, l->no, "block scalar: line less indented than its first"),
			       NULL;
		bool fold = header[0] == '>' && b.len > 0 && trailing == 0;
		for (size_t i = 0; b.len > 0 && i < trailing + (fold ? 0 : 1); i++)
			ar_buf_putc(&b, '\n');
		if (fold)
			ar_buf_putc(&b, ' ');
		trailing = 0;
		ar_buf_append(&b, l->raw + content, l->raw_len - (size_t)content);
	}
	if (chomp != '-' && b.len > 0)
		ar_buf_putc(&b, '\n');
	for (size_t i = 0; chomp == '+' && i < trailing; i++)
		ar_buf_putc(&b, '\n');
	ar_buf_reserve(&b, 0);
	return cJSON_CreateString(b.data);
}

/* A value after "key:" or "- " on the same line; rest "" means a nested node below. */
static cJSON *value(struct yr *y, int parent, const char *rest, int line)
{
	if (*rest == '\0') {
		skip_blank(y);
		const struct line *l = y->pos < y->n ? &y->lines[y->pos] : NULL;
		if (l != NULL && !is_doc_marker(l) &&
		    (l->indent > parent || (l->indent == parent && is_seq_line(l))))
			return node(y);
		return cJSON_CreateNull();
	}
	if (*rest == '|' || *rest == '>')
		return block_scalar(y, parent, rest, line);
	if (*rest == '&' || *rest == '*' || *rest == '!')
		return yerr(y, line, "anchors, aliases and tags are not supported"), NULL;
	const char *end = rest;
	cJSON *v = NULL;
	if (*rest == '[' || *rest == '{')
		v = flow(y, line, &end);
	else if (*rest == '"' || *rest == '\'')
		v = flow_scalar(y, line, &end);
	else
		return plain(rest);
	if (v != NULL && *end != '\0') {
		cJSON_Delete(v);
		return yerr(y, line, "unexpected text after a value: `%s`", end), NULL;
	}
	return v;
}

/* After a collection at `indent`: a more-indented line is a continuation we cannot read. */
static int check_dedent(struct yr *y, int indent)
{
	skip_blank(y);
	if (y->pos < y->n && y->lines[y->pos].indent > indent)
		return yerr(y, y->lines[y->pos].no,
			    "unexpected indentation (multi-line plain scalars are not supported)");
	return 0;
}

static cJSON *mapping(struct yr *y, int indent)
{
	cJSON *obj = cJSON_CreateObject();
	for (skip_blank(y); y->pos < y->n; skip_blank(y)) {
		const struct line *l = &y->lines[y->pos];
		if (l->indent != indent || is_doc_marker(l) || is_seq_line(l))
			break;
		const char *rest;
		bool bad;
		ar_autofree char *key = split_key(y, l, &rest, &bad);
		if (key == NULL) {
			if (!bad)
				yerr(y, l->no, "expected `key: value`, got `%s`", l->text);
			break;
		}
		if (cJSON_GetObjectItemCaseSensitive(obj, key) != NULL) {
			yerr(y, l->no, "duplicate key `%s`", key);
			break;
		}
		int no = l->no;
		y->pos++;
		cJSON *v = value(y, indent, rest, no);
		if (v == NULL)
			break;
		cJSON_AddItemToObject(obj, key, v);
	}
	if (*y->err != NULL || check_dedent(y, indent) < 0)
		return cJSON_Delete(obj), NULL;
	return obj;
}

static cJSON *sequence(struct yr *y, int indent)
{
	cJSON *arr = cJSON_CreateArray();
	for (skip_blank(y); y->pos < y->n; skip_blank(y)) {
		struct line *l = &y->lines[y->pos];
		if (l->indent != indent || !is_seq_line(l))
			break;
		size_t off = 1;
		while (l->text[off] == ' ')
			off++;
		cJSON *v;
		if (l->text[off] == '\0' || l->text[off] == '|' || l->text[off] == '>') {
			/* a block scalar's lines need only be more indented than the dash */
			y->pos++;
			v = value(y, indent, l->text + off, l->no);
		} else {
			/* "- key: v": the item is the node that starts at the content's column */
			l->indent += (int)off;
			memmove(l->text, l->text + off, strlen(l->text + off) + 1);
			v = node(y);
		}
		if (v == NULL)
			break;
		cJSON_AddItemToArray(arr, v);
	}
	if (*y->err != NULL || check_dedent(y, indent) < 0)
		return cJSON_Delete(arr), NULL;
	return arr;
}

static cJSON *node(struct yr *y)
{
	skip_blank(y);
	const struct line *l = &y->lines[y->pos];
	if (y->depth >= MAX_DEPTH)
		return yerr(y, l->no, "nested deeper than %d", MAX_DEPTH), NULL;
	y->depth++;
	cJSON *v;
	const char *rest;
	bool bad;
	ar_autofree char *key = NULL;
	if (is_seq_line(l)) {
		v = sequence(y, l->indent);
	} else if ((key = split_key(y, l, &rest, &bad)) != NULL) {
		v = mapping(y, l->indent);
	} else if (bad) {
		v = NULL;
	} else {
		int indent = l->indent;
		y->pos++;
		v = value(y, indent, l->text, l->no);
		if (v != NULL && check_dedent(y, indent) < 0)
			cJSON_Delete(v), v = NULL;
	}
	y->depth--;
	return v;
}

/* ---- documents ---- */

/* Objects go into out; a v1/List (any kind ending in List with items) is flattened. */
static int add_object(struct yr *y, int line, cJSON *doc, cJSON *out)
{
	if (cJSON_IsNull(doc)) {
		cJSON_Delete(doc);
		return 0;
	}
	if (!cJSON_IsObject(doc)) {
		cJSON_Delete(doc);
		return yerr(y, line, "a document must be an object (a Kubernetes object or List)");
	}
	const cJSON *kind = cJSON_GetObjectItemCaseSensitive(doc, "kind");
	cJSON *items = cJSON_GetObjectItemCaseSensitive(doc, "items");
	size_t kl = cJSON_IsString(kind) ? strlen(kind->valuestring) : 0;
	if (kl >= 4 && strcmp(kind->valuestring + kl - 4, "List") == 0 && cJSON_IsArray(items)) {
		cJSON *it;
		while ((it = cJSON_DetachItemFromArray(items, 0)) != NULL)
			if (add_object(y, line, it, out) < 0)
				return cJSON_Delete(doc), -1;
		cJSON_Delete(doc);
		return 0;
	}
	cJSON_AddItemToArray(out, doc);
	return 0;
}

static int yaml_stream(struct yr *y, cJSON *out)
{
	for (size_t i = 0; i < y->n; i++)
		if (y->lines[i].text[0] == '\t')
			return yerr(y, y->lines[i].no,
				    "a tab in the indentation (YAML allows spaces "
				    "only)");
	for (skip_blank(y); y->pos < y->n; skip_blank(y)) {
		const struct line *l = &y->lines[y->pos];
		if (is_doc_marker(l)) {
			if (strlen(l->text) > 3)
				return yerr(y, l->no, "content after `---` is not supported");
			y->pos++;
			continue;
		}
		if (l->text[0] == '%')
			return yerr(y, l->no, "YAML directives are not supported");
		if (l->indent != 0)
			return yerr(y, l->no, "a document must start at column 1");
		int no = l->no;
		cJSON *doc = node(y);
		if (doc == NULL)
			return -1;
		if (add_object(y, no, doc, out) < 0)
			return -1;
		skip_blank(y);
		if (y->pos < y->n && !is_doc_marker(&y->lines[y->pos]))
			return yerr(y, y->lines[y->pos].no, "expected `---` between documents");
	}
	return 0;
}

static cJSON *json_manifest(const char *text, size_t len, const char *origin, ar_error_t *err)
{
	const char *end = NULL;
	cJSON *doc = cJSON_ParseWithLengthOpts(text, len, &end, false);
	if (doc == NULL) {
		int line = 1;
		for (const char *p = text; end != NULL && p < end; p++)
			line += *p == '\n';
		ar_error_make(err, 0, "%s:%d: invalid JSON", origin, line);
		return NULL;
	}
	struct yr y = {.origin = origin, .err = err};
	cJSON *out = cJSON_CreateArray();
	if (cJSON_IsArray(doc)) {
		cJSON *it;
		while ((it = cJSON_DetachItemFromArray(doc, 0)) != NULL)
			if (add_object(&y, 1, it, out) < 0)
				break;
		cJSON_Delete(doc);
	} else {
		add_object(&y, 1, doc, out);
	}
	if (*err != NULL)
		return cJSON_Delete(out), NULL;
	return out;
}

cJSON *ar_manifest_read(const char *text, size_t len, const char *origin, ar_error_t *err)
{
	size_t i = 0;
	while (i < len && isspace((unsigned char)text[i]))
		i++;
	if (i < len && (text[i] == '{' || text[i] == '['))
		return json_manifest(text, len, origin, err);
	if (memchr(text, '\0', len) != NULL) {
		ar_error_make(err, 0, "%s: a NUL byte: not a text manifest", origin);
		return NULL;
	}
	struct yr y = {.origin = origin, .err = err};
	split_lines(&y, text, len);
	cJSON *out = cJSON_CreateArray();
	if (yaml_stream(&y, out) < 0)
		cJSON_Delete(out), out = NULL;
	for (size_t k = 0; k < y.n; k++)
		free(y.lines[k].text);
	free(y.lines);
	return out;
}
