import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';

/** Who holds a DATA_DIR: written to `<DATA_DIR>/service.lock` as JSON. */
export interface LockHolder {
  pid: number;
  /** The kernel's boot id: a lock from before a reboot names a pid that means nothing now. */
  bootId: string;
  /** `all`, `api`, `worker`, or the CLI command holding it for a moment. */
  role: string;
  /** The API's address once it listens. */
  url?: string;
  startedAt: string;
}

export interface DataDirLock {
  /** Records the address the holder listens on, for the message a second start gets. */
  listening: (url: string) => void;
  /** Removes the lock file, if it is still this process's. */
  release: () => void;
}

/** A second process asked for a DATA_DIR another one holds. */
export class DataDirBusyError extends Error {
  constructor(
    readonly holder: LockHolder,
    dataDir: string,
  ) {
    super(
      `another process uses DATA_DIR ${dataDir} and its embedded Postgres: pid ${holder.pid} (${holder.role}` +
        `${holder.url ? `, ${holder.url}` : ''}, since ${holder.startedAt}). ` +
        `Stop it first (Ctrl-C in its terminal, or kill ${holder.pid}). To run a second one beside it, give it its own ` +
        'DATA_DIR and EMBEDDED_PG_PORT; several processes on one database need DATABASE_URL (docs/operations.md, "Several processes")',
    );
  }
}

const LOCK_FILE = 'service.lock';

/**
 * Takes `<dataDir>/service.lock` for this process, or throws DataDirBusyError naming
 * the process that holds it. One process owns an embedded Postgres: it starts it and
 * stops it when it stops, so a second process attached to it would lose its database
 * when the first one stopped. A lock whose process is gone (killed, or from before a
 * reboot, or a restarted container's pid 1 that is this process now) is taken over.
 * The file is made with O_EXCL, so of two processes starting at once one gets it.
 */
export function lockDataDir(dataDir: string, role: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, LOCK_FILE);
  const holder: LockHolder = { pid: process.pid, bootId: bootId(), role, startedAt: new Date().toISOString() };
  for (let tries = 0; ; tries++) {
    try {
      const fd = openSync(file, 'wx', 0o644);
      writeSync(fd, JSON.stringify(holder));
      closeSync(fd);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const other = readHolder(file);
    if (other && isRunning(other)) throw new DataDirBusyError(other, dataDir);
    if (tries > 0) throw new Error(`${file} could not be taken over: remove it if no process uses ${dataDir}`);
    rmSync(file, { force: true });
  }
  const mine = () => readHolder(file)?.pid === process.pid;
  return {
    listening: (url) => {
      if (!mine()) return;
      // Written whole, then renamed: a reader never sees half of it.
      writeFileSync(`${file}.${process.pid}`, JSON.stringify({ ...holder, url }));
      renameSync(`${file}.${process.pid}`, file);
    },
    release: () => {
      if (mine()) rmSync(file, { force: true });
    },
  };
}

/** The holder written in the lock file, or undefined when there is none or it is not readable as one. */
export function readHolder(file: string): LockHolder | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const holder = JSON.parse(readFileSync(file, 'utf8')) as LockHolder;
    return Number.isInteger(holder.pid) ? holder : undefined;
  } catch {
    return undefined; // not a lock this code wrote: nobody holds it
  }
}

function isRunning(holder: LockHolder): boolean {
  if (holder.pid === process.pid || holder.bootId !== bootId()) return false;
  try {
    process.kill(holder.pid, 0);
    return true;
  } catch (error) {
    // EPERM: a process of another user has that pid, alive.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return 'unknown'; // no /proc (not Linux): pids are compared alone
  }
}
