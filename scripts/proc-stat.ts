import { readFileSync } from 'node:fs';

/**
 * The fields of /proc/PID/stat after the command name (Linux), or null when the process is
 * gone: [0] the state letter, [1] the parent's pid, [11] and [12] user and system CPU ticks.
 * The command name may hold spaces and parentheses, so the fields start after its last `)`.
 */
export function procStatFields(pid: number | string): string[] | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}
