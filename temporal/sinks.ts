// The sinks sessions report metrics and log lines through: no history event, no effect on replay.
import type { Sinks } from '@temporalio/workflow';

/**
 * What a session reports to its worker's metrics, through a sink: fire and forget, no history event,
 * no effect on replay. The worker feeds these to Prometheus (activities/metrics.ts).
 */
export interface SessionMetricsSinks extends Sinks {
  sessionMetrics: {
    /** The acquisition phase ended: with the lease (`acquired`) or without it (the outcome's status). */
    acquisitionEnded(outcome: string, waitedMs: number): void;
    /** A release woke this session and it took the lease: release to grant, on the lock service's clock. */
    handedOff(ms: number): void;
    /** The session parked on one timer of at most `upToMs`, until woken or due. */
    parked(upToMs: number): void;
    /** The park ended (woken, due, or the session moved on). */
    unparked(): void;
    /**
     * The session lost its lease: the keeper found it lost (its renewal refused, or the service out of
     * reach), or the session let it go at its hold limit or when its holder's keep-alives stopped.
     */
    leaseLost(at: 'renewal' | 'hold-limit' | 'holder-gone'): void;
    /**
     * The workflow refused a message instead of acting on it: `message` is its name, `why` one of
     * MESSAGE_REFUSALS (never the payload, which may be anyone's text).
     */
    messageRefused(message: string, why: MessageRefusal): void;
    /** The workflow decided by its own policy, the decision activity having failed for good. */
    decidedInWorkflow(decision: string, fallbackCause: string): void;
  };
}

/**
 * Why a workflow refused a message: its payload did not parse; it named another lease or lacked the
 * release key; the lock service does not bear its claim out; or it changed nothing.
 */
export const MESSAGE_REFUSALS = ['bad-payload', 'not-the-owner', 'not-confirmed', 'nothing-changed'] as const;
export type MessageRefusal = (typeof MESSAGE_REFUSALS)[number];

/** One retry decision as the session applied it: the retry harness's log line, with the session id added by the sink. */
export interface DecisionLogLine {
  key: string;
  requester: string;
  attempt: number;
  provider: string;
  model: string | null;
  decision: string;
  /** The delay the decision asked for (null: none). */
  backoffRequestedMs: number | null;
  /** The delay the session applied after jitter and the guardrails (null: it did not sleep). */
  backoffAppliedMs: number | null;
  /** What became of it: its own back-off, a park it gave way to, an escalation, or the end. */
  appliedAs: string;
  fallbackCause: string | null;
  /** The decision's starvation risk (low, medium, high): logged, counted, and watched per key. */
  starvationRisk: string;
  /** Made by a worker in the lab-only single-process mode. */
  labSingleProcess?: boolean;
}

/** How a session's acquisition ended: the outcome line its decision lines lead to. */
export interface OutcomeLogLine {
  key: string;
  requester: string;
  /** acquired, or the status the session ended with (abandoned, halted...). */
  outcome: string;
  attempts: number;
  /** Escalations on the way (an escalated session may still acquire, or be abandoned by its operator). */
  escalations: number;
  waitedMs: number;
}

/**
 * What a session writes to its worker's log, through a sink: the workflow's own logger goes to the
 * SDK's runtime logger, not to the worker's structured log. Not called on replay, so a line is
 * written once.
 */
export interface SessionLogSinks extends Sinks {
  sessionLog: {
    decided(line: DecisionLogLine): void;
    acquisitionEnded(line: OutcomeLogLine): void;
  };
}
