// paddock-agent: a local sandbox's init (pid 1 inside, the sandbox user) that starts commands
// for the runtime. An exec through nsenter costs a chain of host processes (a shell to join the
// cgroups, nsenter, its fork into the pid namespace, a shell to read the command) before the
// command runs; through the agent it is one connection and one fork of a small process that is
// already inside every namespace.
//
// Trust: the agent listens on a socket the runtime made on the host and handed it as a
// descriptor; nothing inside the sandbox can reach that socket's path (another mount namespace)
// or its descriptor (the agent is not dumpable, so its /proc entries and ptrace are closed to
// the sandbox user, and every descriptor it holds is close-on-exec). Signals sent from inside
// never reach a pid namespace's init. So the commands it runs cannot steer it; what they print is
// copied, never interpreted.
//
// The sandbox's hard cap is the agent's too: it is started with the moment the sandbox must end
// (the session's expiresAt plus a grace, wall-clock milliseconds), and then it kills every process
// of the sandbox and exits, which ends the pid namespace, whatever became of Paddock's processes.
//
// Each connection is one command, one move of that deadline, or one connection to a port. Frames
// both ways are [type: 1 byte][length: u32 LE][payload].
//   runtime -> agent: 'T' (first and only frame) the sandbox's new deadline (i64 LE, wall-clock
//                     ms); the agent answers 'T' with the deadline now in force.
//                     'N' (first and only frame) a port (u16 LE): a connection to it on the
//                     sandbox's loopback address, 127.0.0.1, else ::1 (see "Ports" below).
//                     'R' the request (items [kind][u32 len][bytes]: 'a' an argv element, 'e' an
//                     environment entry NAME=value, 'c' the working directory, 'g' the name of
//                     the command's own cgroup), 'G' go (the runtime has put the command's pid
//                     into its cgroup), 'I' stdin bytes, 'D' the end of stdin.
//   agent -> runtime: 'P' the command's pid in the sandbox (u32), 'O' stdout, 'E' stderr,
//                     'C' the command closed its stdin (send no more), 'X' the exit (i32 code,
//                     -1 when a signal ended it; i32 signal), 'F' a failure to start (text).
// Every command runs in a cgroup of its own, so that everything it starts, double forks included,
// is ended by one write to its cgroup.kill. Where the runtime handed the agent the sandbox's v2
// group (a directory descriptor) and named the command's group ('g'), the command is born
// in that group (clone3 with CLONE_INTO_CGROUP), which the agent makes under the name the runtime
// gave: a move between groups costs the kernel an RCU grace period, milliseconds on every exec.
// Otherwise the command waits on a pipe between its fork and its exec until 'G', while the
// runtime moves it.
// Output is read from a command only while its last frame has been sent whole: a reader that
// stops reading holds the command on its own write, hop by hop, and nothing here grows.
// A connection that closes before its command has exited takes the command's session with it.
// After the exit the runtime closes the connection, not the agent: it may still be writing.
//
// Ports: for 'N' the agent forks a relay and forgets the connection; the relay is the agent's
// fork, not exec'd, so it is as undumpable as the agent, holds nothing of the agent's but this
// one connection, and stays in the agent's groups (the sandbox's limits, never a group of its
// own: it counts against the sandbox's processes, memory and CPU, and ends with it). It connects
// as the sandbox user from inside the sandbox's network namespace, which any program of the
// sandbox can do too: to 127.0.0.1, and to ::1 where that is refused, within CONNECT_MS. It
// answers one frame: 'K', connected; or 'F' [errno: u32 LE][text], ECONNREFUSED when nothing
// accepts on the port. After 'K' the connection carries the TCP connection's bytes as they are,
// both ways, with no frames: an end each way is passed on as a half-close (shutdown), a failure
// or a reset on either side ends both (the program gets a reset). Each way holds one chunk at
// most, and the next is read only once it is written, so a side that stops reading holds the
// other's writes, hop by hop. One process per connection, none on the host. A program of the
// sandbox may kill a relay (its user's process, as its own are): that ends that connection only.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/sched.h>
#include <linux/sched/types.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNECTIONS 256
#define REQUEST_MAX (4u << 20)
#define CHUNK (64u * 1024)
#define HEADER 5
// Once the command has exited, how long its pipes must stay quiet before a background process
// still holding them is taken to be the only writer left.
#define DRAIN_MS 10
#define AGENT_SLICE_NS 100000ULL

extern char **environ;

enum phase { READING_REQUEST, WAITING_GO, RUNNING, DONE };

struct conn {
  int sock;
  enum phase phase;
  pid_t child;
  int go;          // write end of the pipe the command waits on
  int out, err;    // the command's stdout and stderr (read ends)
  int in;          // the command's stdin (write end); -1 once closed
  // Frame being read from the runtime.
  unsigned char head[HEADER];
  size_t head_got;
  unsigned char *body;
  size_t body_len, body_got;
  // Stdin waiting for the command's pipe.
  unsigned char *stdin_buf;
  size_t stdin_len, stdin_off;
  int stdin_end;         // 'D' seen: close the pipe once stdin_buf is written
  int stdin_closed;      // the command closed its stdin: later 'I' frames are dropped
  int tell_closed;       // 'C' is owed to the runtime
  // Frame being written to the runtime.
  unsigned char *outbuf;
  size_t out_len, out_off;
  int next_stream;       // which of out and err is read first next time, for fairness
  int exited, status;
  long long quiet_since; // ms: the last output once the command has exited
};

static struct conn *conns[MAX_CONNECTIONS];
static int listener = -1, sigfd = -1;
/** A CLOCK_REALTIME timer at the sandbox's deadline; -1 without one. */
static int deadline_fd = -1;
/** The sandbox's cgroup v2 directory, below which each command's own group is; -1 without. */
static int cgroup_dir = -1;

/**
 * This process's scheduling slice, in ns; 0 is the kernel's default. The agent asks for the
 * shortest (0.1 ms): all sandboxes together weigh a quarter of one of the control plane's
 * processes, and on a busy host a task of that weight that woke with the default slice waited
 * behind whole slices of the API, its clients and PostgreSQL before it forked a neighbour's
 * command. A short slice moves its turn earlier without raising its share: the kernel (EEVDF, 6.12
 * and later; older ones ignore the request) still gives the group its weight's worth and no more.
 * Commands go back to the default, so that a tenant's busy loop is not cut into slices that cost
 * the host a switch every 0.1 ms.
 */
static void ask_slice(unsigned long long ns) {
  struct sched_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.sched_policy = SCHED_NORMAL;
  attr.sched_runtime = ns;
  syscall(SYS_sched_setattr, 0, &attr, 0);
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void put_u32(unsigned char *p, uint32_t v) {
  p[0] = v & 0xff; p[1] = (v >> 8) & 0xff; p[2] = (v >> 16) & 0xff; p[3] = (v >> 24) & 0xff;
}

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

static void drop(int slot) {
  struct conn *c = conns[slot];
  if (!c) return;
  // The runtime is gone before the command ended: nothing would read or stop it.
  if (c->child > 0 && !c->exited) kill(-c->child, SIGKILL);
  close_fd(&c->sock);
  close_fd(&c->go);
  close_fd(&c->out);
  close_fd(&c->err);
  close_fd(&c->in);
  free(c->body);
  free(c->stdin_buf);
  free(c->outbuf);
  free(c);
  conns[slot] = NULL;
}

/** Queues one frame; the caller has checked that nothing else is queued. */
static int queue_frame(struct conn *c, char type, const void *data, size_t len) {
  if (!c->outbuf) c->outbuf = malloc(HEADER + CHUNK);
  if (!c->outbuf || len > CHUNK) return -1;
  c->outbuf[0] = (unsigned char)type;
  put_u32(c->outbuf + 1, (uint32_t)len);
  if (len) memcpy(c->outbuf + HEADER, data, len);
  c->out_len = HEADER + len;
  c->out_off = 0;
  return 0;
}

/** Writes what is queued; 1 when all of it is sent, 0 when the socket is full, -1 when it is gone. */
static int flush(struct conn *c) {
  while (c->out_off < c->out_len) {
    ssize_t n = send(c->sock, c->outbuf + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) { c->out_off += (size_t)n; continue; }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    return -1;
  }
  c->out_len = c->out_off = 0;
  return 1;
}

/** A frame sent at once (the socket's buffer is empty whenever these are sent); a failure drops the connection. */
static int send_now(int slot, char type, const void *data, size_t len) {
  struct conn *c = conns[slot];
  if (queue_frame(c, type, data, len) < 0) { drop(slot); return -1; }
  int sent = flush(c);
  if (sent < 0) { drop(slot); return -1; }
  return 0;
}

static void fail_start(int slot, const char *what) {
  char text[256];
  snprintf(text, sizeof text, "%s: %s", what, strerror(errno));
  struct conn *c = conns[slot];
  // Best effort (the socket's buffer is empty this early), then the connection ends: the runtime
  // reads 'F' or the close.
  if (queue_frame(c, 'F', text, strlen(text)) == 0) flush(c);
  drop(slot);
}

static void child_fail(const char *format, const char *arg, int code) {
  dprintf(2, format, arg);
  _exit(code);
}

/** In the command's process, after fork: waits for 'G', then becomes the command. */
static void become_command(int go_read, int in_read, int out_write, int err_write, char **argv, char **envp, const char *cwd) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
  setsid();
  ask_slice(0);
  if (dup2(in_read, 0) < 0 || dup2(out_write, 1) < 0 || dup2(err_write, 2) < 0) _exit(126);
  if (go_read >= 0) {
    if (dup2(go_read, 3) < 0) _exit(126);
    // Nothing of the other commands (their stdin, their go pipes) is held while this one waits.
    if (syscall(SYS_close_range, 4, ~0U, 0) < 0) for (int fd = 4; fd < 65536; fd++) close(fd);
    char go = 0;
    ssize_t n;
    do n = read(3, &go, 1); while (n < 0 && errno == EINTR);
    close(3);
    if (n != 1 || go != 'g') _exit(126);
  }
  if (chdir(cwd) < 0) child_fail("paddock: cannot enter the working directory %s\n", cwd, 125);
  environ = envp;
  execvp(argv[0], argv);
  if (errno == ENOENT) child_fail("paddock: %s: not found\n", argv[0], 127);
  dprintf(2, "paddock: %s: %s\n", argv[0], strerror(errno));
  _exit(126);
}

/**
 * A fork whose child starts in the command's own group: its pid in the parent, 0 in the child,
 * -1 (nothing made) when there is no such group here or the kernel will not (the caller forks).
 */
static pid_t born_in(const char *group) {
  if (!group || cgroup_dir < 0 || strchr(group, '/') || group[0] == '.') return -1;
  // The runtime names the group; the agent makes it (the sandbox's group is its uid's to make
  // groups in), so an exec costs the runtime no file system call before it starts.
  if (mkdirat(cgroup_dir, group, 0755) < 0 && errno != EEXIST) return -1;
  int fd = openat(cgroup_dir, group, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct clone_args args;
  memset(&args, 0, sizeof args);
  args.flags = CLONE_INTO_CGROUP;
  args.exit_signal = SIGCHLD;
  args.cgroup = (uint64_t)fd;
  pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof args);
  if (pid != 0) close(fd);
  return pid;
}

static int nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/** Parses the request and forks the command, held before its exec; answers 'P'. */
static void start(int slot) {
  struct conn *c = conns[slot];
  size_t argc = 0, envc = 0;
  const char *cwd = NULL, *group = NULL;
  // Two passes over the items: count, then point into the body (NULs written over each item's
  // following header byte would clobber it, so every string is copied to its own NUL-ended slot).
  for (size_t at = 0; at < c->body_len;) {
    if (c->body_len - at < HEADER) { errno = EINVAL; return fail_start(slot, "a malformed request"); }
    char kind = (char)c->body[at];
    uint32_t len = get_u32(c->body + at + 1);
    if (len > c->body_len - at - HEADER || memchr(c->body + at + HEADER, 0, len)) { errno = EINVAL; return fail_start(slot, "a malformed request"); }
    if (kind == 'a') argc++;
    else if (kind == 'e') envc++;
    else if (kind != 'c' && kind != 'g') { errno = EINVAL; return fail_start(slot, "a malformed request"); }
    at += HEADER + len;
  }
  if (argc == 0) { errno = EINVAL; return fail_start(slot, "a request without a program"); }
  char **argv = calloc(argc + 1, sizeof *argv), **envp = calloc(envc + 1, sizeof *envp);
  char *strings = malloc(c->body_len + 1);
  if (!argv || !envp || !strings) { free(argv); free(envp); free(strings); errno = ENOMEM; return fail_start(slot, "the request"); }
  size_t ai = 0, ei = 0, si = 0;
  for (size_t at = 0; at < c->body_len;) {
    char kind = (char)c->body[at];
    uint32_t len = get_u32(c->body + at + 1);
    char *s = strings + si;
    memcpy(s, c->body + at + HEADER, len);
    s[len] = 0;
    si += len + 1;
    if (kind == 'a') argv[ai++] = s;
    else if (kind == 'e') envp[ei++] = s;
    else if (kind == 'g') group = s;
    else cwd = s;
    at += HEADER + len;
  }
  // The strings' total is at most the body's length: each item's 5-byte header pays for its NUL.
  int go[2] = {-1, -1}, in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  if (pipe2(go, O_CLOEXEC) < 0 || pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
    int saved = errno;
    for (int i = 0; i < 2; i++) { close_fd(&go[i]); close_fd(&in[i]); close_fd(&out[i]); close_fd(&err[i]); }
    free(argv); free(envp); free(strings);
    errno = saved;
    return fail_start(slot, "pipes for the command");
  }
  pid_t pid = born_in(group);
  int placed = pid >= 0;
  if (!placed) pid = fork();
  if (pid == 0) become_command(placed ? -1 : go[0], in[0], out[1], err[1], argv, envp, cwd ? cwd : "/workspace");
  int saved = errno;
  free(argv); free(envp); free(strings);
  close(go[0]); close(in[0]); close(out[1]); close(err[1]);
  if (pid < 0) {
    close(go[1]); close(in[1]); close(out[0]); close(err[0]);
    errno = saved;
    return fail_start(slot, "fork");
  }
  free(c->body);
  c->body = NULL;
  c->body_len = c->body_got = 0;
  c->child = pid;
  c->go = go[1];
  c->in = in[1];
  c->out = out[0];
  c->err = err[0];
  nonblocking(c->in);
  nonblocking(c->out);
  nonblocking(c->err);
  if (placed) {
    close_fd(&c->go);
    c->phase = RUNNING;
    return;
  }
  c->phase = WAITING_GO;
  unsigned char p[4];
  put_u32(p, (uint32_t)pid);
  send_now(slot, 'P', p, sizeof p);
}

static long long get_i64(const unsigned char *p) {
  return (long long)((uint64_t)get_u32(p) | ((uint64_t)get_u32(p + 4) << 32));
}

static void put_i64(unsigned char *p, long long v) {
  put_u32(p, (uint32_t)((uint64_t)v & 0xffffffffu));
  put_u32(p + 4, (uint32_t)((uint64_t)v >> 32));
}

/**
 * Sets the sandbox's deadline, wall-clock ms since the epoch: the wall clock, as expiresAt is, so
 * a host whose clock is set forward ends its sandboxes by the time it shows. One already past fires
 * at once.
 */
static int set_deadline(long long ms) {
  if (deadline_fd < 0) deadline_fd = timerfd_create(CLOCK_REALTIME, TFD_CLOEXEC | TFD_NONBLOCK);
  if (deadline_fd < 0) return -1;
  struct itimerspec at;
  memset(&at, 0, sizeof at);
  if (ms < 1) ms = 1; // zero would disarm it
  at.it_value.tv_sec = (time_t)(ms / 1000);
  at.it_value.tv_nsec = (long)(ms % 1000) * 1000000L;
  return timerfd_settime(deadline_fd, TFD_TIMER_ABSTIME, &at, NULL);
}

/**
 * The deadline has come: every process of the sandbox is killed, and the agent exits, which ends
 * the pid namespace (the kernel kills whatever a fork slipped past the first kill). Signals from
 * pid 1 reach every process of its namespace: they all run as its user. Where the agent holds the
 * sandbox's v2 group, its cgroup.kill (made the sandbox uid's for this) ends the rest first: what
 * runs outside the namespace for the sandbox, its network's slirp4netns and nsenter's host halves.
 */
static void end_sandbox(void) {
  if (cgroup_dir >= 0) {
    int fd = openat(cgroup_dir, "cgroup.kill", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      ssize_t n = write(fd, "1", 1);
      (void)n;
      close(fd);
    }
  }
  kill(-1, SIGKILL);
  _exit(0);
}

/** 'T': the runtime moves the deadline; answered with the deadline now in force. */
static void retime(int slot) {
  struct conn *c = conns[slot];
  if (c->body_len != 8) { errno = EINVAL; return fail_start(slot, "a malformed deadline"); }
  long long ms = get_i64(c->body);
  if (set_deadline(ms) < 0) return fail_start(slot, "the deadline");
  free(c->body);
  c->body = NULL;
  c->body_len = c->body_got = 0;
  c->phase = DONE;
  unsigned char t[8];
  put_i64(t, ms);
  send_now(slot, 'T', t, sizeof t);
}

// ---- Ports: a connection to a port on the sandbox's loopback address ('N') ----

/** How long the relay's connect may take, both addresses together. */
#define CONNECT_MS 5000

/** The relay's answer to a port request that failed: 'F' [errno: u32 LE][text]. Best effort. */
static void port_answer_failure(int sock, int code, const char *what) {
  unsigned char out[HEADER + 4 + 200];
  char text[200];
  snprintf(text, sizeof text, "%s: %s", what, strerror(code));
  size_t len = strlen(text);
  out[0] = 'F';
  put_u32(out + 1, (uint32_t)(4 + len));
  put_u32(out + HEADER, (uint32_t)code);
  memcpy(out + HEADER + 4, text, len);
  ssize_t n;
  do n = send(sock, out, HEADER + 4 + len, MSG_NOSIGNAL | MSG_DONTWAIT); while (n < 0 && errno == EINTR);
}

static void port_fail(int slot, int code, const char *what) {
  port_answer_failure(conns[slot]->sock, code, what);
  drop(slot);
}

/** A connected TCP socket to the loopback address of `family`, or -errno. */
static int dial(int family, uint16_t port, long long until) {
  int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  int r;
  if (family == AF_INET) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    r = connect(fd, (struct sockaddr *)&a, sizeof a);
  } else {
    struct sockaddr_in6 a;
    memset(&a, 0, sizeof a);
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(port);
    a.sin6_addr = in6addr_loopback;
    r = connect(fd, (struct sockaddr *)&a, sizeof a);
  }
  if (r < 0 && errno != EINPROGRESS && errno != EINTR) { int code = errno; close(fd); return -code; }
  if (r < 0) {
    // Loopback answers at once unless the listener's backlog is full: then the SYN is retried
    // until the timeout.
    for (;;) {
      long long left = until - now_ms();
      if (left <= 0) { close(fd); return -ETIMEDOUT; }
      struct pollfd p = {.fd = fd, .events = POLLOUT};
      int n = poll(&p, 1, (int)left);
      if (n > 0) break;
      if (n < 0 && errno != EINTR) { int code = errno; close(fd); return -code; }
    }
    int code = 0;
    socklen_t len = sizeof code;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &len) < 0) code = errno;
    if (code) { close(fd); return -code; }
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

/** One direction of a relay: bytes read from `from` wait in `buf` until `to` has taken them all. */
struct half {
  int from, to;
  unsigned char buf[CHUNK];
  size_t len, off;
  int eof;   // `from` has ended and its end was passed on (shutdown of `to`'s writing side)
  int hup;   // `from` hung up while its bytes could not be read yet
};

/** Moves what can move now; -1 when the connection is broken. */
static int move(struct half *h) {
  for (int turn = 0; turn < 16; turn++) {
    if (h->len > h->off) {
      ssize_t n = send(h->to, h->buf + h->off, h->len - h->off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) { h->off += (size_t)n; continue; }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
      return -1;
    }
    h->len = h->off = 0;
    if (h->eof) return 0;
    ssize_t n = recv(h->from, h->buf, sizeof h->buf, MSG_DONTWAIT);
    if (n > 0) { h->len = (size_t)n; continue; }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    if (n < 0) return -1;
    // The end, once everything before it is passed on: a half-close, and the other way goes on.
    h->eof = 1;
    shutdown(h->to, SHUT_WR);
    return 0;
  }
  return 0;
}

/**
 * In the relay's process: connects to the port, answers 'K' or 'F', then copies bytes both ways
 * until both have ended or either side fails. Each way holds one chunk at most, and reads the
 * next only once the last is written: a side that stops reading holds the other's writes.
 */
static void relay(int sock, uint16_t port) {
  ask_slice(0);
  // Nothing of the agent's (its listener, other connections, the cgroup directory, the timer)
  // stays in this process: a connection the agent drops must close, whatever this one does.
  if (sock != 3 && dup2(sock, 3) < 0) _exit(1);
  sock = 3;
  if (syscall(SYS_close_range, 4, ~0U, 0) < 0) for (int fd = 4; fd < 65536; fd++) close(fd);
  long long until = now_ms() + CONNECT_MS;
  int tcp = dial(AF_INET, port, until);
  // Nothing on 127.0.0.1: the program may listen on ::1 alone. A sandbox without IPv6 answers
  // that it has no such address, which is the same news: nothing listens.
  if (tcp == -ECONNREFUSED) {
    int v6 = dial(AF_INET6, port, until);
    if (v6 >= 0 || (v6 != -EADDRNOTAVAIL && v6 != -EAFNOSUPPORT && v6 != -ENETUNREACH)) tcp = v6;
  }
  if (tcp < 0) {
    port_answer_failure(sock, -tcp, "connect");
    _exit(0);
  }
  unsigned char ok[HEADER] = {'K', 0, 0, 0, 0};
  if (send(sock, ok, sizeof ok, MSG_NOSIGNAL) != (ssize_t)sizeof ok) _exit(0);
  static struct half up, down;
  up.from = sock; up.to = tcp;
  down.from = tcp; down.to = sock;
  struct half *halves[2] = {&up, &down};
  for (;;) {
    int broken = 0;
    for (int i = 0; i < 2; i++) if (move(halves[i]) < 0) broken = 1;
    if (broken) break;
    if (up.eof && up.len == 0 && down.eof && down.len == 0) { close(tcp); _exit(0); }
    struct pollfd p[2];
    // p[0] is the runtime's socket, p[1] the program's.
    for (int i = 0; i < 2; i++) {
      struct half *reading = halves[i], *writing = halves[1 - i];
      short events = 0;
      if (!reading->eof && reading->len == 0) events |= POLLIN;
      if (writing->len > 0) events |= POLLOUT;
      // Without anything to wait for on it, a socket is still watched for its peer's end (the
      // runtime destroying the stream, a reset), unless it hung up already with bytes still unread.
      p[i] = (struct pollfd){.fd = events == 0 && reading->hup ? -1 : reading->from, .events = events};
    }
    int n = poll(p, 2, -1);
    if (n < 0) { if (errno == EINTR) continue; break; }
    for (int i = 0; i < 2; i++) {
      if (p[i].revents & POLLERR) broken = 1;
      else if ((p[i].revents & POLLHUP) && p[i].events == 0) {
        // The peer is gone both ways. What it sent before is still read (once there is room),
        // but nothing can reach it any more.
        if (halves[i]->eof) broken = 1;
        else halves[i]->hup = 1;
      }
    }
    if (broken) break;
  }
  // A failure is passed on as one: the program gets a reset, not an orderly end.
  struct linger reset = {.l_onoff = 1, .l_linger = 0};
  setsockopt(tcp, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  close(tcp);
  _exit(0);
}

/** 'N': a connection to a port; its own process relays it, and the agent forgets it. */
static void open_port(int slot) {
  struct conn *c = conns[slot];
  if (c->body_len != 2) return port_fail(slot, EINVAL, "a malformed port request");
  uint16_t port = (uint16_t)(c->body[0] | (c->body[1] << 8));
  if (port == 0) return port_fail(slot, EINVAL, "port 0");
  // A plain fork: the relay stays in the agent's groups, the sandbox's own, so it counts against
  // the sandbox's processes, memory and CPU, and ends with the sandbox.
  pid_t pid = fork();
  if (pid < 0) return port_fail(slot, errno, "fork");
  if (pid == 0) relay(c->sock, port);
  drop(slot);
}

/** A whole frame from the runtime. */
static void frame(int slot) {
  struct conn *c = conns[slot];
  char type = (char)c->head[0];
  if (c->phase == READING_REQUEST) {
    if (type == 'T') return retime(slot);
    if (type == 'N') return open_port(slot);
    if (type != 'R') { errno = EPROTO; return fail_start(slot, "a request was expected"); }
    return start(slot);
  }
  if (type == 'G') {
    // A command that died before it was let go (reap moved it on) has nothing to be told.
    if (c->go >= 0) {
      ssize_t n;
      do n = write(c->go, "g", 1); while (n < 0 && errno == EINTR);
      close_fd(&c->go);
    }
    if (c->phase == WAITING_GO) c->phase = RUNNING;
  } else if (type == 'I') {
    // Taken by start's buffer; written in the loop. Dropped once the command closed its stdin.
    if (c->stdin_closed || c->in < 0) { free(c->body); }
    else { free(c->stdin_buf); c->stdin_buf = c->body; c->stdin_len = c->body_len; c->stdin_off = 0; }
    c->body = NULL;
  } else if (type == 'D') {
    c->stdin_end = 1;
    if (c->stdin_len == c->stdin_off) close_fd(&c->in);
  } else {
    drop(slot);
    return;
  }
  free(c->body);
  c->body = NULL;
  c->body_len = c->body_got = 0;
}

/** Reads from the runtime until a frame is whole or the socket is empty. */
static void read_socket(int slot) {
  struct conn *c = conns[slot];
  if (c->phase == DONE) {
    // The exit is told; what the runtime still sends (the end of a stdin the command never read)
    // is dropped until it closes. Closing first would reset the connection under its writes, and
    // the runtime would lose the frames it had not read yet.
    unsigned char scratch[4096];
    for (;;) {
      ssize_t n = recv(c->sock, scratch, sizeof scratch, MSG_DONTWAIT);
      if (n > 0) continue;
      if (n < 0 && errno == EINTR) continue;
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) drop(slot);
      return;
    }
  }
  for (;;) {
    if (!conns[slot]) return;
    // Stdin not yet taken by the command: no more is read, so the runtime's writes wait.
    if (c->stdin_len > c->stdin_off) return;
    ssize_t n;
    if (c->head_got < HEADER) {
      n = recv(c->sock, c->head + c->head_got, HEADER - c->head_got, MSG_DONTWAIT);
      if (n > 0) {
        c->head_got += (size_t)n;
        if (c->head_got < HEADER) continue;
        c->body_len = get_u32(c->head + 1);
        size_t max = c->phase == READING_REQUEST ? REQUEST_MAX : CHUNK;
        if (c->body_len > max) { errno = EMSGSIZE; return fail_start(slot, "the request"); }
        c->body_got = 0;
        c->body = c->body_len ? malloc(c->body_len) : NULL;
        if (c->body_len && !c->body) { errno = ENOMEM; return fail_start(slot, "the request"); }
        if (c->body_len) continue;
      }
    } else {
      n = recv(c->sock, c->body + c->body_got, c->body_len - c->body_got, MSG_DONTWAIT);
      if (n > 0) c->body_got += (size_t)n;
    }
    if (n == 0) { drop(slot); return; }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) drop(slot);
      return;
    }
    if (c->head_got == HEADER && c->body_got == c->body_len) {
      c->head_got = 0;
      frame(slot);
      if (!conns[slot] || c->phase == DONE) return;
    }
  }
}

static void write_stdin(int slot) {
  struct conn *c = conns[slot];
  while (c->in >= 0 && c->stdin_off < c->stdin_len) {
    ssize_t n = write(c->in, c->stdin_buf + c->stdin_off, c->stdin_len - c->stdin_off);
    if (n > 0) { c->stdin_off += (size_t)n; continue; }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    // The command closed its stdin: the rest is dropped, and the runtime told to send no more.
    close_fd(&c->in);
    c->stdin_closed = 1;
    c->tell_closed = 1;
  }
  if (c->stdin_off >= c->stdin_len) {
    free(c->stdin_buf);
    c->stdin_buf = NULL;
    c->stdin_len = c->stdin_off = 0;
    if (c->stdin_end) close_fd(&c->in);
  }
}

/** Reads one chunk of output into a frame; 0 when both streams have nothing now. */
static int read_output(struct conn *c) {
  for (int i = 0; i < 2; i++) {
    int which = (c->next_stream + i) % 2;
    int *fd = which == 0 ? &c->out : &c->err;
    if (*fd < 0) continue;
    if (!c->outbuf) c->outbuf = malloc(HEADER + CHUNK);
    if (!c->outbuf) return 0;
    ssize_t n = read(*fd, c->outbuf + HEADER, CHUNK);
    if (n > 0) {
      c->outbuf[0] = which == 0 ? 'O' : 'E';
      put_u32(c->outbuf + 1, (uint32_t)n);
      c->out_len = HEADER + (size_t)n;
      c->out_off = 0;
      c->next_stream = (which + 1) % 2;
      c->quiet_since = now_ms();
      return 1;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) close_fd(fd);
  }
  return 0;
}

/** Everything that can move on this connection now, without blocking. */
static void pump(int slot) {
  struct conn *c = conns[slot];
  if (!c) return;
  if (c->phase == RUNNING || c->phase == WAITING_GO) write_stdin(slot);
  // A bounded turn, so that one flood cannot keep the others waiting.
  for (int turn = 0; turn < 16; turn++) {
    int sent = flush(c);
    if (sent < 0) { drop(slot); return; }
    if (sent == 0) return;
    if (c->tell_closed) {
      c->tell_closed = 0;
      queue_frame(c, 'C', NULL, 0);
      continue;
    }
    if (c->phase == RUNNING && read_output(c)) continue;
    break;
  }
  if (c->phase == RUNNING && c->exited && c->out_len == 0) {
    int quiet = now_ms() - c->quiet_since >= DRAIN_MS;
    if ((c->out < 0 && c->err < 0) || quiet) {
      unsigned char x[8];
      int code = WIFEXITED(c->status) ? WEXITSTATUS(c->status) : -1;
      int sig = WIFSIGNALED(c->status) ? WTERMSIG(c->status) : 0;
      put_u32(x, (uint32_t)code);
      put_u32(x + 4, (uint32_t)sig);
      c->phase = DONE;
      close_fd(&c->out);
      close_fd(&c->err);
      close_fd(&c->in);
      queue_frame(c, 'X', x, sizeof x);
      if (flush(c) < 0) drop(slot);
    }
  }
}

static void reap(void) {
  struct signalfd_siginfo info;
  while (read(sigfd, &info, sizeof info) > 0) {}
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    for (int i = 0; i < MAX_CONNECTIONS; i++) {
      struct conn *c = conns[i];
      if (c && c->child == pid && !c->exited) {
        c->exited = 1;
        c->status = status;
        c->quiet_since = now_ms();
        // Not yet let go (the runtime vanished before 'G'): nothing will follow.
        if (c->phase == WAITING_GO) { c->phase = RUNNING; }
      }
    }
    // Anything else was an orphan reparented to the init: reaped, nothing more.
  }
}

static void accept_all(void) {
  for (;;) {
    int fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    int slot = -1;
    for (int i = 0; i < MAX_CONNECTIONS; i++) if (!conns[i]) { slot = i; break; }
    struct conn *c = slot < 0 ? NULL : calloc(1, sizeof *c);
    if (!c) { close(fd); continue; }
    c->sock = fd;
    c->go = c->out = c->err = c->in = -1;
    c->phase = READING_REQUEST;
    conns[slot] = c;
  }
}

int main(int argc, char **argv) {
  // argv: the listening socket's descriptor, the one to say "ready" on, the sandbox's marker, the
  // sandbox's deadline (wall-clock ms since the epoch; 0: none), and optionally the descriptor of
  // the sandbox's cgroup v2 directory.
  if (argc < 5) return 2;
  int listen_fd = atoi(argv[1]), ready_fd = atoi(argv[2]);
  long long deadline = strtoll(argv[4], NULL, 10);
  int group_fd = argc > 5 ? atoi(argv[5]) : -1;
  prctl(PR_SET_DUMPABLE, 0);
  signal(SIGPIPE, SIG_IGN);
  ask_slice(AGENT_SLICE_NS);
  if (dup2(listen_fd, 3) < 0) return 3;
  listener = 3;
  if (group_fd >= 0 && dup2(group_fd, 4) == 4) cgroup_dir = 4;
  // Armed before anything of the tenant's can run: a sandbox whose cap cannot be kept does not start.
  if (deadline > 0 && set_deadline(deadline) < 0) return 6;
  if (write(ready_fd, "\n", 1) != 1) return 4;
  // Nothing the runtime started it with stays open but the socket (3), the cgroup directory (4)
  // and the deadline's timer.
  int null = open("/dev/null", O_RDWR);
  if (null >= 0) { dup2(null, 0); dup2(null, 1); dup2(null, 2); }
  for (int fd = cgroup_dir < 0 ? 4 : 5; fd < 1024; fd++) if (fd != deadline_fd) close(fd);
  fcntl(listener, F_SETFD, FD_CLOEXEC);
  if (cgroup_dir >= 0) fcntl(cgroup_dir, F_SETFD, FD_CLOEXEC);
  nonblocking(listener);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0) return 5;

  static struct pollfd fds[3 + MAX_CONNECTIONS * 4];
  static int owner[3 + MAX_CONNECTIONS * 4];
  for (;;) {
    int n = 0, timeout = -1;
    fds[n++] = (struct pollfd){.fd = listener, .events = POLLIN};
    fds[n++] = (struct pollfd){.fd = sigfd, .events = POLLIN};
    // Without a deadline, -1: poll skips it.
    fds[n++] = (struct pollfd){.fd = deadline_fd, .events = POLLIN};
    long long now = now_ms();
    for (int i = 0; i < MAX_CONNECTIONS; i++) {
      struct conn *c = conns[i];
      if (!c) continue;
      short sock_events = 0;
      if (c->out_len > 0) sock_events |= POLLOUT;
      if (c->stdin_len == c->stdin_off) sock_events |= POLLIN;
      owner[n] = i;
      fds[n++] = (struct pollfd){.fd = c->sock, .events = sock_events};
      if (c->phase == RUNNING && c->out_len == 0) {
        if (c->out >= 0) { owner[n] = i; fds[n++] = (struct pollfd){.fd = c->out, .events = POLLIN}; }
        if (c->err >= 0) { owner[n] = i; fds[n++] = (struct pollfd){.fd = c->err, .events = POLLIN}; }
        if (c->exited) {
          long long left = c->quiet_since + DRAIN_MS - now;
          int wait = left < 0 ? 0 : (int)left + 1;
          if (timeout < 0 || wait < timeout) timeout = wait;
        }
      }
      if (c->in >= 0 && c->stdin_len > c->stdin_off) { owner[n] = i; fds[n++] = (struct pollfd){.fd = c->in, .events = POLLOUT}; }
    }
    int ready = poll(fds, (nfds_t)n, timeout);
    if (ready < 0 && errno != EINTR) continue;
    if (ready > 0 && fds[2].revents) end_sandbox();
    if (ready > 0 && fds[1].revents) reap();
    if (ready > 0 && fds[0].revents) accept_all();
    for (int k = 3; ready > 0 && k < n; k++) {
      if (!fds[k].revents) continue;
      int slot = owner[k];
      struct conn *c = conns[slot];
      if (!c) continue;
      if (fds[k].fd != c->sock) continue;
      // The runtime has gone (or, the exit told, is done): the connection ends, and a command
      // still running with it (drop).
      if (fds[k].revents & (POLLHUP | POLLERR)) drop(slot);
      else if (fds[k].revents & POLLIN) read_socket(slot);
    }
    // Every connection moves what it can: output after a quiet pipe, the exit after the drain.
    for (int i = 0; i < MAX_CONNECTIONS; i++) if (conns[i]) pump(i);
  }
}
