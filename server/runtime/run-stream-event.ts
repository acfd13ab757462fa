/** An event of a run's stream, before it is stored: its name and its data (any JSON-able value). */
export interface RunStreamEvent {
  event: string;
  data: unknown;
}
