/** One of the leader's tasks: run every `everyMs` while this worker leads. */
export interface MaintenanceTask {
  name: string;
  everyMs: number;
  run: () => Promise<void>;
}
