// SPDX-License-Identifier: MIT
/*
 * gb-rsh: the remote-shell agent mpirun uses between the two test guests
 * (--mca plm_rsh_agent), which have no ssh. Plain TCP on the guests' private
 * link, no authentication: a test-bed tool, never for a real network.
 *
 *   gb-rsh --serve PORT [WRAPPER...]   accept commands; run each as
 *                                      WRAPPER... /bin/sh -c COMMAND
 *   gb-rsh HOST COMMAND...             as "ssh HOST COMMAND...": the words
 *                                      joined by spaces, run remotely; its
 *                                      stdout and stderr relayed, its exit
 *                                      status returned
 *   gb-rsh --stop HOST                 make HOST's server exit
 *
 * Wire format: the client sends a 4-byte big-endian length and the command
 * (an empty command is the stop request). The server answers with frames
 * of a type byte ('o' stdout, 'e' stderr, 'x' exit status), a 4-byte
 * big-endian length and the data; 'x' ends the exchange. A client that
 * goes away kills the command's process group.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define GB_RSH_MAX_COMMAND (1u << 20)

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_all(int fd, void *data, size_t len)
{
	char *p = data;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_frame(int sock, char type, const void *data, uint32_t len)
{
	unsigned char head[5];
	uint32_t be = htonl(len);

	head[0] = (unsigned char)type;
	memcpy(head + 1, &be, 4);
	if (write_all(sock, head, sizeof(head)))
		return -1;
	return len ? write_all(sock, data, len) : 0;
}

/* Run one command for the client on sock; returns when it has exited. */
static void serve_one(int sock, char **wrapper, int n_wrapper)
{
	int out[2], err[2];
	uint32_t len;
	char *cmd;
	pid_t pid;
	int status = 0, open_pipes = 2;

	if (read_all(sock, &len, 4))
		return;
	len = ntohl(len);
	if (len > GB_RSH_MAX_COMMAND)
		return;
	cmd = calloc(1, len + 1);
	if (!cmd || read_all(sock, cmd, len))
		return;
	if (len == 0) {
		send_frame(sock, 'x', "\0\0\0\0", 4);
		kill(getppid(), SIGTERM);
		return;
	}
	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		return;
	pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		char **argv = calloc((size_t)n_wrapper + 4, sizeof(*argv));
		int devnull = open("/dev/null", O_RDONLY);
		int i;

		if (!argv || devnull < 0)
			_exit(127);
		setpgid(0, 0);
		dup2(devnull, 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		for (i = 0; i < n_wrapper; i++)
			argv[i] = wrapper[i];
		argv[i++] = "/bin/sh";
		argv[i++] = "-c";
		argv[i++] = cmd;
		execv(argv[0], argv);
		fprintf(stderr, "gb-rsh: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	close(out[1]);
	close(err[1]);
	while (open_pipes) {
		struct pollfd p[3] = {
			{ .fd = out[0], .events = POLLIN },
			{ .fd = err[0], .events = POLLIN },
			{ .fd = sock, .events = POLLIN },
		};
		char data[65536];
		int i;

		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		/* The client sends nothing after the command: readable is gone. */
		if (p[2].revents) {
			kill(-pid, SIGKILL);
			break;
		}
		for (i = 0; i < 2; i++) {
			ssize_t n;

			if (!p[i].revents || p[i].fd < 0)
				continue;
			n = read(p[i].fd, data, sizeof(data));
			if (n > 0) {
				send_frame(sock, i ? 'e' : 'o', data, (uint32_t)n);
			} else if (n == 0 || errno != EINTR) {
				close(i ? err[0] : out[0]);
				if (i)
					err[0] = -1;
				else
					out[0] = -1;
				open_pipes--;
			}
		}
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	{
		uint32_t be = htonl((uint32_t)status);

		send_frame(sock, 'x', &be, 4);
	}
}

static int serve(const char *port, char **wrapper, int n_wrapper)
{
	struct sockaddr_in addr = { .sin_family = AF_INET };
	int one = 1, lsock;

	lsock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lsock < 0)
		return perror("gb-rsh: socket"), 1;
	setsockopt(lsock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	addr.sin_port = htons((uint16_t)atoi(port));
	if (bind(lsock, (struct sockaddr *)&addr, sizeof(addr)) || listen(lsock, 16))
		return perror("gb-rsh: bind/listen"), 1;
	signal(SIGCHLD, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		int sock = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);

		if (sock < 0) {
			if (errno == EINTR)
				continue;
			return perror("gb-rsh: accept"), 1;
		}
		if (fork() == 0) {
			signal(SIGCHLD, SIG_DFL);
			close(lsock);
			serve_one(sock, wrapper, n_wrapper);
			_exit(0);
		}
		close(sock);
	}
}

static int dial(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	int sock, one = 1, rc;

	rc = getaddrinfo(host, port, &hints, &res);
	if (rc) {
		fprintf(stderr, "gb-rsh: %s: %s\n", host, gai_strerror(rc));
		return -1;
	}
	sock = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, 0);
	if (sock < 0 || connect(sock, res->ai_addr, res->ai_addrlen)) {
		fprintf(stderr, "gb-rsh: connect %s:%s: %s\n", host, port, strerror(errno));
		freeaddrinfo(res);
		if (sock >= 0)
			close(sock);
		return -1;
	}
	freeaddrinfo(res);
	setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return sock;
}

static int run_remote(const char *host, const char *port, int argc, char **argv)
{
	size_t len = 0, off = 0;
	uint32_t be;
	char *cmd;
	int i, sock;

	for (i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	cmd = calloc(1, len + 1);
	if (!cmd)
		return 255;
	for (i = 0; i < argc; i++)
		off += (size_t)sprintf(cmd + off, "%s%s", i ? " " : "", argv[i]);
	sock = dial(host, port);
	if (sock < 0)
		return 255;
	be = htonl((uint32_t)off);
	if (write_all(sock, &be, 4) || write_all(sock, cmd, off))
		return 255;
	for (;;) {
		unsigned char head[5];
		char data[65536];
		uint32_t n;

		if (read_all(sock, head, sizeof(head))) {
			fprintf(stderr, "gb-rsh: %s closed the connection\n", host);
			return 255;
		}
		memcpy(&be, head + 1, 4);
		n = ntohl(be);
		if (n > sizeof(data) || read_all(sock, data, n))
			return 255;
		if (head[0] == 'x') {
			memcpy(&be, data, 4);
			return (int)ntohl(be);
		}
		write_all(head[0] == 'e' ? 2 : 1, data, n);
	}
}

int main(int argc, char **argv)
{
	const char *port = getenv("GB_RSH_PORT") ? getenv("GB_RSH_PORT") : "7471";
	int i = 1;

	if (argc >= 3 && !strcmp(argv[1], "--serve"))
		return serve(argv[2], argv + 3, argc - 3);
	if (argc == 3 && !strcmp(argv[1], "--stop"))
		return run_remote(argv[2], port, 0, argv);
	/* ssh-style options Open MPI may pass (-x, -n, -T) carry no value. */
	while (i < argc && argv[i][0] == '-')
		i++;
	if (argc - i < 2) {
		fprintf(stderr, "usage: gb-rsh --serve PORT [WRAPPER...] | gb-rsh HOST COMMAND... | gb-rsh --stop HOST\n");
		return 2;
	}
	return run_remote(argv[i], port, argc - i - 1, argv + i + 1);
}
