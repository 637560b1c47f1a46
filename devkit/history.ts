// Readers of workflow histories: timer and activity summaries, patch markers, event counts.
import type { temporal } from '@temporalio/proto';

/** The summaries of the timers a workflow started, in order, decoded from their metadata payloads. */
export function timerSummaries(history: temporal.api.history.v1.IHistory): string[] {
  return (history.events ?? [])
    .filter((e) => e.timerStartedEventAttributes)
    .map((e) => decodeJsonPayload(e.userMetadata?.summary?.data));
}

/** The summaries of the timers a workflow cancelled before they fired, in the order they started. */
export function cancelledTimerSummaries(history: temporal.api.history.v1.IHistory): string[] {
  const events = history.events ?? [];
  const cancelled = new Set(
    events.flatMap((e) =>
      e.timerCanceledEventAttributes ? [String(e.timerCanceledEventAttributes.startedEventId)] : [],
    ),
  );
  return events
    .filter((e) => e.timerStartedEventAttributes && cancelled.has(String(e.eventId)))
    .map((e) => decodeJsonPayload(e.userMetadata?.summary?.data));
}

/** The marker with which the SDK records a local activity's result in the history. */
const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

/** The summaries of the activities a workflow ran, local ones (recorded as markers) included, in order. */
export function activitySummaries(history: temporal.api.history.v1.IHistory): string[] {
  return (history.events ?? [])
    .filter(
      (e) =>
        e.activityTaskScheduledEventAttributes ||
        e.markerRecordedEventAttributes?.markerName === LOCAL_ACTIVITY_MARKER,
    )
    .map((e) => decodeJsonPayload(e.userMetadata?.summary?.data));
}

/** The marker with which the SDK records a `patched()` branch a run took. */
const PATCH_MARKER = 'core_patch';

/** The ids of the patches a workflow run took, in order (a patch marker carries its id in JSON). */
export function patchIds(history: temporal.api.history.v1.IHistory): string[] {
  return (history.events ?? [])
    .map((e) => e.markerRecordedEventAttributes)
    .filter((m) => m?.markerName === PATCH_MARKER)
    .flatMap((m) => Object.values(m!.details ?? {}).flatMap((p) => p.payloads ?? []))
    .map((payload) => (JSON.parse(Buffer.from(payload.data ?? []).toString('utf8')) as { id: string }).id);
}

function decodeJsonPayload(data: Uint8Array | null | undefined): string {
  return data ? (JSON.parse(Buffer.from(data).toString('utf8')) as string) : '';
}
