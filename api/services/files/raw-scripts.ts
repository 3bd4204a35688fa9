import { PRELUDE } from './scripts.ts';

// The raw read's script: a file's bytes, or one range of them, streamed out of the sandbox as it
// reads them (the raw write is scripts.ts's WRITE_SCRIPT, announcing its temporary file). It runs
// as scripts.ts's do: in the sandbox, as its user, the request's values as positional parameters.

/**
 * raw read: $1 path; the range as $2 first byte and $3 last byte (either may be empty: "5" ""
 * is from byte 5 to the end, "" "5" the last 5 bytes; both empty, the whole file). Writes a header
 * line "SIZE START END" (the range within the file, END inclusive; START past END or the size:
 * none of it is in the file), then those bytes, and never more than the size it announced.
 * The file is opened once: a file replaced meanwhile is read as it was when measured.
 */
export const RAW_READ_SCRIPT = `${PRELUDE}
p=$1 first=$2 last=$3
[ -d "$p" ] && fail is_a_directory
[ -e "$p" ] || missing "$p"
[ -f "$p" ] || fail not_a_regular_file
[ -r "$p" ] || fail permission_denied
exec 3<"$p" || fail permission_denied
size=$(stat -L -c %s -- /proc/self/fd/3 2>/dev/null || stat -L -c %s -- "$p")
if [ -n "$first" ]; then
  start=$first end=\${last:-$((size - 1))}
  [ "$end" -lt "$size" ] || end=$((size - 1))
elif [ -n "$last" ]; then
  start=$((size - last)) end=$((size - 1))
  [ "$start" -ge 0 ] || start=0
  [ "$last" -gt 0 ] || start=$size
else
  start=0 end=$((size - 1))
fi
printf '%s %s %s\\n' "$size" "$start" "$end"
[ "$start" -lt "$size" ] && [ "$start" -le "$end" ] || exit 0
if [ "$start" -eq 0 ]; then exec head -c "$((end + 1))" <&3; fi
tail -c "+$((start + 1))" <&3 | head -c "$((end - start + 1))"
`;
