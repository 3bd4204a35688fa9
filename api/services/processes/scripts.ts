// The POSIX sh behind background processes (docs/api.md, "Background processes"). A process and
// everything Paddock knows of it live in the sandbox, in a directory of its own under PROCS_DIR:
// any API replica serves it with a short exec, and an API restart loses nothing. The directory
// is outside /workspace (the tenant's files, archives and globs never meet it) and on the
// sandbox's own storage: /tmp, an emptyDir on Kubernetes, a tmpfs charged to the sandbox's
// memory cgroup on the local runtime.
//
//   started  start time, nanoseconds since the epoch (seconds * 1e9 where `date` lacks %N)
//   command  the command as shown in lists, base64 (so that no byte of it can split a line)
//   runner   pid of the runner, the shell that waits for the command and records its end
//   pid      pid of the command, which leads a session (and process group) of its own
//   exit     "<status> <ended>" once it has ended: written by the runner, renamed into place
//   in       a FIFO, the command's stdin, opened read-write by the command so that it never sees
//            an end of input between two writes
//   o, e     FIFOs from the command's stdout and stderr to the copiers
//   out.N, err.N  the kept output: the copier writes KEEP bytes to segment N, then starts N+1
//            and removes N-1, so at most 2 * KEEP bytes per stream are on disk, and the byte at
//            absolute offset x is in segment floor(x / KEEP), which the readers rely on.
//
// Every value from a request travels as a positional argument, never inside the script text.
// The ids are checked by the API (proc_ and 24 of [0-9a-z]) before they name a directory. The
// tenant's own commands run as the same user and can write here: that only ever misleads the
// tenant about their own sandbox, and the API parses whatever it reads strictly.
//
// Exit statuses the API reads: 0 done; 2 the process still runs (output without follow);
// 3 the process has ended (stdin); 4 no such process; 10 the per-sandbox limit is reached;
// 11 the id is taken; 12 the state directory cannot be made; 125 the working directory cannot
// be entered (the frame reader's own).

export const PROCS_DIR = '/tmp/.paddock-procs';

export const EXIT = { running: 2, ended: 3, notFound: 4, limit: 10, taken: 11, unusable: 12, busy: 13, badCwd: 125 } as const;

// Shared by the readers: `ended` says whether the process has ended (its exit recorded, or its
// runner gone without recording one, killed by the tenant, say).
const STATE = `
ended() {
  [ -f "$d/exit" ] && return 0
  r=$(head -c 24 "$d/runner" 2>/dev/null) || return 1
  case $r in ''|*[!0-9]*) return 1 ;; esac
  kill -0 "$r" 2>/dev/null && return 1
  return 0
}
snooze() { sleep 0.2 2>/dev/null || sleep 1; }
`;

// The runner: $1 directory, $2 keep bytes, $3 the command's PATH, then argv. Its variables are
// __PADDOCK_*, which no command's environment may use: the command inherits this shell's
// environment, and an assignment to a name the command exported would change what it sees.
export const RUNNER = `__PADDOCK_D=$1 __PADDOCK_K=$2 __PADDOCK_UP=$3
shift 3
# GNU head writes through stdio, which holds a file's output until it exits: stdbuf makes it
# write each read at once, so a follower sees output as it comes (busybox's head always does).
__PADDOCK_H=; command -v stdbuf >/dev/null 2>&1 && __PADDOCK_H='stdbuf -o0'
__paddock_copy() {
  n=0
  while :; do
    $__PADDOCK_H head -c "$__PADDOCK_K" > "$__PADDOCK_D/$1.$n"
    z=$(wc -c < "$__PADDOCK_D/$1.$n" 2>/dev/null) || break
    z=\${z##* }
    [ "$z" -lt "$__PADDOCK_K" ] && break
    n=$((n + 1))
    rm -f "$__PADDOCK_D/$1.$((n - 2))"
  done
  # Out of space, say: the command's output is read on and dropped, never a SIGPIPE for it.
  exec cat > /dev/null
}
__paddock_copy out < "$__PADDOCK_D/o" &
__PADDOCK_CO=$!
__paddock_copy err < "$__PADDOCK_D/e" &
__PADDOCK_CE=$!
__PADDOCK_S=; for c in /usr/bin/setsid /bin/setsid; do [ -x "$c" ] && __PADDOCK_S=$c && break; done
(
  PATH=$__PADDOCK_UP
  export PATH
  if [ -n "$__PADDOCK_S" ]; then exec "$__PADDOCK_S" "$@"; else exec "$@"; fi
) 0<>"$__PADDOCK_D/in" >"$__PADDOCK_D/o" 2>"$__PADDOCK_D/e" &
__PADDOCK_P=$!
echo "$__PADDOCK_P" > "$__PADDOCK_D/pid.tmp" && mv -f "$__PADDOCK_D/pid.tmp" "$__PADDOCK_D/pid"
wait "$__PADDOCK_P"
__PADDOCK_X=$?
__PADDOCK_T=$(date +%s%N 2>/dev/null)
case $__PADDOCK_T in ''|*[!0-9]*) __PADDOCK_T=$(date +%s)000000000 ;; esac
echo "$__PADDOCK_X $__PADDOCK_T" > "$__PADDOCK_D/exit.tmp"
# The exit is recorded once the copiers have written the last output, so a reader that sees it
# has all of it; or a second later, when something the command left behind still holds its
# output open (\`server &\`): the command has ended all the same.
( sleep 1; mv -f "$__PADDOCK_D/exit.tmp" "$__PADDOCK_D/exit" 2>/dev/null ) &
wait "$__PADDOCK_CO" "$__PADDOCK_CE"
mv -f "$__PADDOCK_D/exit.tmp" "$__PADDOCK_D/exit" 2>/dev/null
exit 0`;

/**
 * Starts a process: $1 id, $2 keep bytes, $3 most running, $4 most ended kept, $5 the command as
 * listed (base64), $6 the runner (RUNNER), then argv. Runs with the command's environment (secrets and all) and working
 * directory, which the runner and the command inherit. Prints the start time; answers once the
 * command has been started (its pid recorded).
 */
export const START = `__PADDOCK_UP=\${PATH:-/usr/local/bin:/usr/bin:/bin}
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
__PADDOCK_B=${PROCS_DIR}
__PADDOCK_D=$__PADDOCK_B/$1 __PADDOCK_K=$2 __PADDOCK_MAX=$3 __PADDOCK_KEEP=$4 __PADDOCK_C=$5 __PADDOCK_RS=$6
shift 6
if [ ! -d "$__PADDOCK_B" ]; then rm -f "$__PADDOCK_B" 2>/dev/null; mkdir -p -m 700 "$__PADDOCK_B" 2>/dev/null || exit ${EXIT.unusable}; fi
# Starts take turns at counting (a lock on the directory, let go before the runner starts, so
# nothing long-lived holds it): all at once, each would count every other and all be refused.
# Where the image has no flock, counting after this one's directory exists still never passes
# the limit, it only may refuse too many. A turn not come within 10 s is refused as busy: counting
# without it could pass the limit.
if command -v flock >/dev/null 2>&1; then exec 9<"$__PADDOCK_B" && flock -w 10 9 || exit ${EXIT.busy}; fi
mkdir -m 700 "$__PADDOCK_D" 2>/dev/null || exit ${EXIT.taken}
# A start in progress (no runner yet) counts as running. The runners are read by one head, its
# headers naming the file each first line is of (a head each was a fork and an exec a process).
# In a function: its positional parameters are its own, the command's argv stays in this shell's.
__paddock_count() {
  __PADDOCK_N=0
  set --
  for __PADDOCK_E in "$__PADDOCK_B"/proc_*; do
    [ -d "$__PADDOCK_E" ] && [ ! -f "$__PADDOCK_E/exit" ] || continue
    __PADDOCK_N=$((__PADDOCK_N + 1))
    set -- "$@" "$__PADDOCK_E/runner"
  done
  [ $# -gt 0 ] || return 0
  __PADDOCK_N=$((__PADDOCK_N - $(head -v -c 24 -- "$@" 2>/dev/null | {
    g=0 f=
    while IFS= read -r l || [ -n "$l" ]; do
      case $l in '==> '*' <==') f=1; continue ;; esac
      [ -n "$f" ] || continue
      f=
      case $l in ''|*[!0-9]*) ;; *) kill -0 "$l" 2>/dev/null || g=$((g + 1)) ;; esac
    done
    echo $g
  })))
}
__paddock_count
if [ "$__PADDOCK_N" -gt "$__PADDOCK_MAX" ]; then rm -rf "$__PADDOCK_D"; exit ${EXIT.limit}; fi
exec 9<&-
# Ended processes are kept for their output and exit status: the most recent ones only. Their
# exits ("<status> <ended>") are read by one head too.
__paddock_prune() {
  set --
  for __PADDOCK_E in "$__PADDOCK_B"/proc_*; do
    [ -f "$__PADDOCK_E/exit" ] && set -- "$@" "$__PADDOCK_E/exit"
  done
  [ $# -gt "$__PADDOCK_KEEP" ] || return 0
  head -v -c 40 -- "$@" 2>/dev/null | {
    e=
    while IFS= read -r l || [ -n "$l" ]; do
      case $l in '==> '*' <==') e=\${l#'==> '} && e=\${e%/exit <==} && e=\${e##*/}; continue ;; esac
      [ -n "$e" ] || continue
      t=\${l#* }
      case $t in ''|*[!0-9]*) t=0 ;; esac
      printf '%s %s\\n' "$t" "$e"
      e=
    done
  } | sort -rn | tail -n +$((__PADDOCK_KEEP + 1)) | while read -r __PADDOCK_T __PADDOCK_E; do
    case $__PADDOCK_E in proc_*) rm -rf "$__PADDOCK_B/$__PADDOCK_E" ;; esac
  done
}
__paddock_prune
__PADDOCK_T=$(date +%s%N 2>/dev/null)
case $__PADDOCK_T in ''|*[!0-9]*) __PADDOCK_T=$(date +%s)000000000 ;; esac
mkfifo -m 600 "$__PADDOCK_D/in" "$__PADDOCK_D/o" "$__PADDOCK_D/e" || { rm -rf "$__PADDOCK_D"; exit ${EXIT.unusable}; }
printf '%s\\n' "$__PADDOCK_C" > "$__PADDOCK_D/command"
echo "$__PADDOCK_T" > "$__PADDOCK_D/started"
__PADDOCK_S=; for c in /usr/bin/setsid /bin/setsid; do [ -x "$c" ] && __PADDOCK_S=$c && break; done
# The runner leaves this exec's session, and holds none of its descriptors: the exec ends now.
$__PADDOCK_S /bin/sh -c "$__PADDOCK_RS" paddock-proc "$__PADDOCK_D" "$__PADDOCK_K" "$__PADDOCK_UP" "$@" </dev/null >/dev/null 2>&1 &
echo "$!" > "$__PADDOCK_D/runner"
# The runner records the pid within milliseconds: looked for soon, then less often (about 5 s in all).
__PADDOCK_I=0
while [ ! -f "$__PADDOCK_D/pid" ] && [ "$__PADDOCK_I" -lt 100 ]; do
  case $__PADDOCK_I in 0|1|2) __PADDOCK_W=0.005 ;; 3|4) __PADDOCK_W=0.02 ;; *) __PADDOCK_W=0.05 ;; esac
  sleep $__PADDOCK_W 2>/dev/null || sleep 1
  __PADDOCK_I=$((__PADDOCK_I + 1))
done
echo "$__PADDOCK_T"`;

/**
 * Lists processes, one line each: `id started status ended command`, status a number or
 * `running` or `lost` (the runner is gone without recording an end), ended `-` while running.
 * $1, when given, is the one id to list. At most LIST_MAX lines, whatever the tenant planted.
 */
export const LIST_MAX = 256;
export const LIST = `g=\${1:-proc_*} i=0
set --
for d in ${PROCS_DIR}/$g; do
  [ -d "$d" ] && [ -f "$d/started" ] || continue
  i=$((i + 1)); [ $i -gt ${LIST_MAX} ] && break
  set -- "$@" "$d/started" "$d/exit" "$d/runner" "$d/command"
done
[ $# -gt 0 ] || exit 0
# The line of one process, from the first lines of its files.
emit() {
  [ -n "$id" ] && [ \${#s} -le 24 ] && [ \${#x} -le 48 ] || return 0
  if [ -z "$x" ]; then
    case $r in
      ''|*[!0-9]*) x='running -' ;;
      *) if kill -0 "$r" 2>/dev/null; then x='running -'
        # The runner records the exit before it ends: gone, it recorded one since it was read, or never will.
        elif [ -f "$d/exit" ]; then x=$(head -c 48 "$d/exit")
        else x='lost -'; fi ;;
    esac
  fi
  printf '%s %s %s %s\\n' "$id" "$s" "$x" "\${c:--}"
}
# One head for every file of every process, each cut at its bound, its headers naming the file
# each first line is of: a head (a fork and an exec) per file was most of a listing's time. Its
# output is taken whole and cut into lines in the shell's memory: dash's read takes a byte a
# system call, which was most of what was left.
all=$(head -v -c 8192 -- "$@" 2>/dev/null)
set -f
IFS='
'
set -- $all
unset IFS
id= d= f= s= x= r= c=
for l do
  case $l in
    '==> '*' <==')
      f=\${l#'==> '} && f=\${f%' <=='}
      if [ "\${f%/*}" != "$d" ]; then emit; d=\${f%/*}; id=\${d##*/} s= x= r= c=; fi
      f=\${f##*/}
      continue ;;
  esac
  case $f in
    started) s=$l ;;
    exit) x=$l ;;
    runner) r=$l ;;
    command) c=$l ;;
  esac
  f=
done
emit`;

/**
 * The kept output: $1 id, $2 keep bytes, $3 1 to follow. Stdout's bytes on stdout, stderr's on
 * stderr, from the first byte kept; following, what comes next as it comes (polled), until the
 * process has ended and its last output has been sent. Each stream is read through a descriptor
 * held open on its current segment (5 for stdout, 6 for stderr), whose offset `cat` advances: a
 * segment the copier rotates away meanwhile stays readable until the reader is done with it. A
 * reader that falls more than a segment behind skips to the oldest one still kept. Writes block
 * while the API's reader is behind, which is the flow control; the process never waits for it.
 */
export const OUTPUT = `d=${PROCS_DIR}/$1 K=$2 n_out=-1 n_err=-1
[ -f "$d/started" ] || exit ${EXIT.notFound}
${STATE}
# L: the newest segment of stream $1, -1 for none.
newest() {
  L=-1
  for f in "$d/$1".[0-9]*; do
    n=\${f##*.}
    case $n in ''|*[!0-9]*) continue ;; esac
    [ "$n" -gt "$L" ] && L=$n
  done
}
# Opens descriptor $2 on segment $3 of stream $1; fails when the segment is gone.
open() {
  [ -f "$d/$1.$3" ] || return 1
  case $2 in
    5) { command exec 5<"$d/$1.$3"; } 2>/dev/null ;;
    *) { command exec 6<"$d/$1.$3"; } 2>/dev/null ;;
  esac
}
# Descriptor $1 (5 or 6) takes over the segment held on 7.
held() {
  case $1 in
    5) command exec 5<&7 ;;
    *) command exec 6<&7 ;;
  esac
  command exec 7<&-
}
# The segment to start at: the one before the newest, less what the newest holds (so that the
# last K bytes are what is sent first), or when it is gone, the newest. The newest is held open
# (descriptor 7) as soon as it is found: a flood rotates faster than this loop runs on a busy
# host, and a segment rotated away stays readable through a descriptor already open on it.
first() {
  i=0
  while [ $i -lt 5 ]; do
    newest "$1"; [ "$L" -lt 0 ] && return 1
    if ! { command exec 7<"$d/$1.$L"; } 2>/dev/null; then i=$((i + 1)); continue; fi
    [ "$L" -eq 0 ] && { n=0; held "$2"; return 0; }
    z=$(wc -c < "$d/$1.$L" 2>/dev/null) || z=0
    z=\${z##* }
    n=$((L - 1))
    if open "$1" "$2" "$n"; then
      command exec 7<&-
      [ "$z" -gt 0 ] && dd bs="$z" skip=1 count=0 <&"$2" 2>/dev/null
      return 0
    fi
    # Rotated away meanwhile: start at the newest itself, held since it was found.
    n=$L
    held "$2"
    return 0
  done
  return 1
}
# Sends what is new on stream $1 (descriptor $2) to descriptor $3.
pump() {
  eval "n=\\$n_$1"
  if [ "$n" -lt 0 ]; then first "$1" "$2" || return 0; fi
  while :; do
    # A next segment means this one is complete: read to its end, then move on.
    if [ -e "$d/$1.$((n + 1))" ]; then more=1; else more=0; fi
    cat <&"$2" >&"$3"
    [ $more = 1 ] || break
    n=$((n + 1))
    open "$1" "$2" "$n" && continue
    newest "$1"; n=$((L - 1)); [ "$n" -lt 0 ] && n=0
    open "$1" "$2" "$n" || { n=$L; open "$1" "$2" "$n" || break; }
  done
  eval "n_$1=\\$n"
}
if [ "$3" != 1 ]; then
  # A snapshot: at most K bytes of each, however fast the process writes meanwhile.
  if ended; then e=0; else e=${EXIT.running}; fi
  pump out 5 1 | head -c "$K"
  pump err 6 1 | head -c "$K" >&2
  exit $e
fi
while :; do
  if ended; then e=1; else e=0; fi
  pump out 5 1; pump err 6 2
  [ $e = 1 ] && exit 0
  snooze
done`;

/** Writes this exec's stdin to the process's stdin: $1 id. */
export const STDIN = `d=${PROCS_DIR}/$1
[ -f "$d/started" ] || exit ${EXIT.notFound}
${STATE}
ended && exit ${EXIT.ended}
# Read-write: the open never waits for a reader (the process may end meanwhile).
exec cat 1<>"$d/in"`;

/**
 * Signals the process's group: $1 id, $2 TERM or KILL. Waits a moment for its end to be
 * recorded, so that a list right after shows it; a process that ignores TERM is answered anyway.
 */
export const SIGNAL = `d=${PROCS_DIR}/$1
[ -f "$d/started" ] || exit ${EXIT.notFound}
${STATE}
ended && exit 0
p=$(head -c 24 "$d/pid" 2>/dev/null)
case $p in ''|*[!0-9]*) exit 0 ;; esac
kill -s "$2" -- "-$p" 2>/dev/null || kill -s "$2" "$p" 2>/dev/null
i=0
while [ $i -lt 40 ]; do ended && exit 0; sleep 0.05 2>/dev/null || sleep 1; i=$((i + 1)); done
exit 0`;
