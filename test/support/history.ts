import type { temporal } from '@temporalio/proto';

/** The summaries of the timers a workflow started, in order, decoded from their metadata payloads. */
export function timerSummaries(history: temporal.api.history.v1.IHistory): string[] {
  return (history.events ?? [])
    .filter((e) => e.timerStartedEventAttributes)
    .map((e) => decodeJsonPayload(e.userMetadata?.summary?.data));
}

/** The summaries of the activities a workflow scheduled, in order. */
export function activitySummaries(history: temporal.api.history.v1.IHistory): string[] {
  return (history.events ?? [])
    .filter((e) => e.activityTaskScheduledEventAttributes)
    .map((e) => decodeJsonPayload(e.userMetadata?.summary?.data));
}

function decodeJsonPayload(data: Uint8Array | null | undefined): string {
  return data ? (JSON.parse(Buffer.from(data).toString('utf8')) as string) : '';
}
