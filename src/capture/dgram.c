/* DNS datagrams on the capture's UDP socket: each query arrives with the address it
 * was sent to (IP_PKTINFO) and its reply leaves from that address, which
 * IP_TRANSPARENT allows even when it is not an address of the proxy netns (a client
 * that asks 8.8.8.8 gets its answer "from" 8.8.8.8, that is, from the stub). One
 * datagram at a time, or a batch per system call (recvmmsg/sendmmsg) for a loop
 * under load. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "agentrun/capture.h"
#include "agentrun/util.h"

#define PKTINFO_SPACE CMSG_SPACE(sizeof(struct in_pktinfo))

static void recv_hdr(struct msghdr *mh, struct iovec *iov, struct ar_capture_peer *peer, char *cbuf)
{
	memset(peer, 0, sizeof(*peer));
	*mh = (struct msghdr){.msg_name = &peer->from,
			      .msg_namelen = sizeof(peer->from),
			      .msg_iov = iov,
			      .msg_iovlen = 1,
			      .msg_control = cbuf,
			      .msg_controllen = PKTINFO_SPACE};
}

/* -1 when the datagram came without its destination: a reply could only leave from
 * the wrong address. */
static int read_pktinfo(struct msghdr *mh, struct ar_capture_peer *peer)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c != NULL; c = CMSG_NXTHDR(mh, c))
		if (c->cmsg_level == SOL_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;
			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			peer->to = pi.ipi_addr; /* the header's destination, not ipi_spec_dst */
			peer->ifindex = pi.ipi_ifindex;
			return 0;
		}
	return -1;
}

static void send_hdr(struct msghdr *mh, struct iovec *iov, const struct ar_capture_peer *peer,
		     char *cbuf)
{
	memset(cbuf, 0, PKTINFO_SPACE);
	*mh = (struct msghdr){.msg_name = (void *)&peer->from,
			      .msg_namelen = sizeof(peer->from),
			      .msg_iov = iov,
			      .msg_iovlen = 1,
			      .msg_control = cbuf,
			      .msg_controllen = PKTINFO_SPACE};
	struct cmsghdr *c = CMSG_FIRSTHDR(mh);
	c->cmsg_level = SOL_IP;
	c->cmsg_type = IP_PKTINFO;
	c->cmsg_len = CMSG_LEN(sizeof(struct in_pktinfo));
	/* the source is the address the client asked; the route picks the interface */
	struct in_pktinfo pi = {.ipi_spec_dst = peer->to};
	memcpy(CMSG_DATA(c), &pi, sizeof(pi));
}

ssize_t ar_capture_recv_query(int fd, uint8_t *buf, size_t cap, struct ar_capture_peer *peer)
{
	char cbuf[PKTINFO_SPACE];
	struct iovec iov = {buf, cap};
	struct msghdr mh;
	recv_hdr(&mh, &iov, peer, cbuf);
	ssize_t n = TEMP_FAILURE_RETRY(recvmsg(fd, &mh, MSG_TRUNC));
	if (n == -1)
		return -1;
	if (read_pktinfo(&mh, peer) == -1) {
		errno = EPROTO;
		return -1;
	}
	return n;
}

int ar_capture_send_reply(int fd, const uint8_t *buf, size_t len,
			  const struct ar_capture_peer *peer)
{
	char cbuf[PKTINFO_SPACE];
	struct iovec iov = {(void *)buf, len};
	struct msghdr mh;
	send_hdr(&mh, &iov, peer, cbuf);
	ssize_t n = TEMP_FAILURE_RETRY(sendmsg(fd, &mh, MSG_NOSIGNAL));
	return n == (ssize_t)len ? 0 : -1;
}

int ar_capture_recv_queries(int fd, struct ar_capture_dgram *v, size_t n)
{
	struct mmsghdr mm[AR_CAPTURE_BATCH];
	struct iovec iov[AR_CAPTURE_BATCH];
	char cbuf[AR_CAPTURE_BATCH][PKTINFO_SPACE];
	n = n < AR_CAPTURE_BATCH ? n : AR_CAPTURE_BATCH;
	for (size_t i = 0; i < n; i++) {
		iov[i] = (struct iovec){v[i].query, sizeof(v[i].query)};
		recv_hdr(&mm[i].msg_hdr, &iov[i], &v[i].peer, cbuf[i]);
		v[i].reply_len = 0;
	}
	int got = (int)TEMP_FAILURE_RETRY(recvmmsg(fd, mm, (unsigned)n, MSG_TRUNC, NULL));
	for (int i = 0; i < got; i++) {
		v[i].len = mm[i].msg_len;
		/* truncated, or no destination to answer from: nothing to answer */
		if (read_pktinfo(&mm[i].msg_hdr, &v[i].peer) == -1 ||
		    (mm[i].msg_hdr.msg_flags & MSG_TRUNC))
			v[i].len = 0;
	}
	return got;
}

int ar_capture_send_replies(int fd, const struct ar_capture_dgram *v, size_t n)
{
	struct mmsghdr mm[AR_CAPTURE_BATCH];
	struct iovec iov[AR_CAPTURE_BATCH];
	char cbuf[AR_CAPTURE_BATCH][PKTINFO_SPACE];
	size_t k = 0;
	for (size_t i = 0; i < n && i < AR_CAPTURE_BATCH; i++) {
		if (v[i].reply_len == 0)
			continue;
		iov[k] = (struct iovec){(void *)v[i].reply, v[i].reply_len};
		send_hdr(&mm[k].msg_hdr, &iov[k], &v[i].peer, cbuf[k]);
		k++;
	}
	size_t sent = 0;
	while (sent < k) {
		int r = (int)TEMP_FAILURE_RETRY(
		    sendmmsg(fd, mm + sent, (unsigned)(k - sent), MSG_NOSIGNAL));
		if (r <= 0) /* EAGAIN: the rest is dropped, as UDP may */
			return sent > 0 ? (int)sent : -1;
		sent += (size_t)r;
	}
	return (int)sent;
}
