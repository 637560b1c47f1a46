#!/usr/bin/env node
// `lockctl`: start acquisition sessions, release leases, answer escalations, list sessions and
// show a key's queue, from a shell.
import { Command, InvalidArgumentError } from 'commander';
import { modelSwitchStatus, switchModelOff, switchModelOn } from './modelSwitch';
import { ZodError } from 'zod';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import {
  DEFAULT_NAMESPACE,
  DEFAULT_TASK_QUEUE,
  DEFAULT_TEMPORAL_ADDRESS,
  DEFAULT_UI_URL,
} from '../policy/constants';
import {
  describeIssues,
  InvalidLockRequestError,
  isInvalidConfiguration,
  isInvalidLockRequest,
  isLockNotAcquired,
  LockNotAcquiredError,
} from '../policy/errors';
import { FileEscalationStore } from '../activities/escalationStore';
import { type DeploymentVersion, parseDeploymentVersion } from '../policy/deploymentVersion';
import { SESSION_PHASES } from '../policy/sessionModel/sessionTypes';
import { connectClient } from './connect';
import { tracingFromEnv } from '../temporal/tracing';
import { inSpan } from '../temporal/spans';
import { readFencedWrites } from './fencedWrites';
import { type PostmortemOptions, writePostmortem } from './postmortem';
import { awaitLeaseShowingProgress } from './acquireProgress';
import { DEFAULT_HOLDER_TTL_MS } from '../policy/decisions/holdLimits';
import { type HoldMode, holdThenRelease, LEASE_LOST_EXIT } from './lockctlHold';
import {
  forceRelease,
  release,
  resolve,
  startAcquisition,
  startAwaitingLease,
  stateOf,
  statusOf,
} from './lockwardenClient';
import { duration, printable, table } from './present';
import { listSessions } from './sessionList';
import { isDeniedByTemporal, PermissionDeniedError, permissionOf } from './permissionDenied';
import { statusFromSessions } from './readOnlyStatus';

/** lockctl's exit codes: scripts tell how an acquisition ended without parsing its output. */
const EXIT = {
  ok: 0,
  failed: 1,
  invalidInput: 2,
  abandoned: 3,
  halted: 4,
  /** The session ended without the lease some other way. */
  notAcquired: 5,
  /** The lease was lost while lockctl held it (LEASE_LOST_EXIT, set where the hold ends). */
  leaseLost: LEASE_LOST_EXIT,
  /** Temporal refused the command: the key or certificate lacks the namespace permission it needs. */
  permissionDenied: 7,
} as const;

function wholeNumber(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`expected a whole number, got "${value}"`);
  return Number(value);
}

interface GlobalOptions {
  address?: string;
  namespace?: string;
  profile?: string;
  configFile?: string;
  taskQueue: string;
  ui: string;
  pin?: DeploymentVersion;
}

// `--pin lockwarden:0.2.0`: the Worker Deployment Version new sessions are pinned to. Bad input is
// an invalid request like any other (exit code 2).
function deploymentVersion(value: string): DeploymentVersion {
  const parsed = parseDeploymentVersion(value);
  if (!parsed.ok) throw new InvalidLockRequestError('--pin', [parsed.problem]);
  return parsed.version;
}

const program = new Command('lockctl')
  .description('Acquire and release lockwarden locks through Temporal')
  // Temporal's connection as its CLI reads it: these flags over the TEMPORAL_* variables over the
  // profile in the config file (TLS, client certificates, API keys and gRPC metadata live there).
  .option(
    '--address <host:port>',
    `Temporal frontend address (default: $TEMPORAL_ADDRESS, the profile, ${DEFAULT_TEMPORAL_ADDRESS})`,
  )
  .option(
    '--namespace <name>',
    `Temporal namespace (default: $TEMPORAL_NAMESPACE, the profile, ${DEFAULT_NAMESPACE})`,
  )
  .option('--profile <name>', 'connection profile in the config file (default: $TEMPORAL_PROFILE, "default")')
  .option(
    '--config-file <path>',
    "Temporal's TOML config file (default: $TEMPORAL_CONFIG_FILE, the CLI's own)",
  )
  .option(
    '--task-queue <name>',
    'task queue the lockwarden worker polls',
    process.env.LOCKWARDEN_TASK_QUEUE ?? DEFAULT_TASK_QUEUE,
  )
  .option('--ui <url>', 'Temporal Web UI base URL', process.env.TEMPORAL_UI_URL ?? DEFAULT_UI_URL)
  .option(
    '--pin <deployment:build-id>',
    'pin new sessions to this Worker Deployment Version (default: $LOCKWARDEN_PIN)',
    deploymentVersion,
  );

// Runs a command with a connected client, closed afterwards whatever happens. A command that answers
// with a value has it printed as JSON; one that prints its own output answers undefined.
function withClient<A extends unknown[]>(
  run: (
    client: Awaited<ReturnType<typeof connectClient>>,
    global: GlobalOptions,
    ...args: A
  ) => Promise<unknown>,
) {
  return async (...args: A) => {
    const global = program.opts<GlobalOptions>();
    // Traces when the OTEL_* variables ask for them: `lockctl acquire` is then its trace's root.
    const tracing = tracingFromEnv(process.env, 'lockctl');
    const client = await connectClient(global, tracing ? [tracing.plugin] : []);
    const [command = '', subcommand] = program.args;
    try {
      const answer = await inSpan(`lockctl ${command}`, {}, () => run(client, global, ...args));
      // JSON escapes C0 controls itself; printable() escapes the rest the same way, so it stays JSON.
      if (answer !== undefined) console.log(printable(JSON.stringify(answer)));
    } catch (error) {
      if (!isDeniedByTemporal(error)) throw error;
      throw new PermissionDeniedError(
        `lockctl ${command}`,
        client.options.namespace,
        permissionOf(command, subcommand),
      );
    } finally {
      await client.connection.close();
      await tracing?.shutdown();
    }
  };
}

program
  .command('acquire')
  .description(
    'acquire a lock and hold it while lockctl runs (Ctrl-C releases it), for --hold-for, or around a command given after --; --detach leaves it held',
  )
  .argument('<key>', 'lock key')
  .argument(
    '[command...]',
    'run this (after --) under the lease, with LOCKWARDEN_TOKEN set; release when it ends',
  )
  .requiredOption('--requester <id>', 'requester id (one session per requester and key)')
  .option(
    '--owner <id>',
    'the process or job that holds while it waits (deadlock detection); default: the session alone',
  )
  .option('--ttl-ms <ms>', 'lease TTL', wholeNumber)
  .option('--max-retries <n>', 'hard limit on retries', wholeNumber)
  .option('--max-total-wait-ms <ms>', 'hard limit on total wait', wholeNumber)
  .option('--fairness <policy>', 'FIFO, priority-based or no-starvation-guarantee')
  .option('--hold-for <duration>', 'hold this long, then release (e.g. 90s, 5m, 1500ms)', holdDuration)
  .option(
    '--max-hold-ms <ms>',
    "the hold limit: the session lets go at it (default: the worker's)",
    wholeNumber,
  )
  .option(
    '--holder-ttl-ms <ms>',
    `how long the session waits for lockctl's keep-alives before it lets go (default ${DEFAULT_HOLDER_TTL_MS})`,
    wholeNumber,
  )
  .option('--detach', 'exit once held and leave the session holding (until released, or its hold limit)')
  .option('--no-wait', 'print the session and return at once (it holds, detached, once it can)')
  .option('--quiet', 'no progress lines while waiting')
  .action(
    withClient(
      async (
        client,
        global,
        key: string,
        command: string[],
        opts: {
          requester: string;
          owner?: string;
          ttlMs?: number;
          maxRetries?: number;
          maxTotalWaitMs?: number;
          fairness?: string;
          holdFor?: number;
          maxHoldMs?: number;
          holderTtlMs?: number;
          detach?: boolean;
          wait: boolean;
          quiet?: boolean;
        },
      ) => {
        const detached = opts.detach || !opts.wait;
        const modes = [opts.holdFor !== undefined, command.length > 0, detached].filter(Boolean).length;
        if (modes > 1)
          throw new InvalidLockRequestError('acquire options', [
            'choose one of --hold-for, a command after --, and --detach (or --no-wait)',
          ]);
        if (detached && opts.holderTtlMs !== undefined)
          throw new InvalidLockRequestError('acquire options', [
            '--holder-ttl-ms: a detached session has no holder to keep it alive',
          ]);
        const budget = Object.fromEntries(
          Object.entries({ maxRetries: opts.maxRetries, maxTotalWaitMs: opts.maxTotalWaitMs }).filter(
            ([, v]) => v !== undefined,
          ),
        );
        const holderTtlMs = opts.holderTtlMs ?? DEFAULT_HOLDER_TTL_MS;
        const request = {
          key,
          requester: opts.requester,
          budget,
          // A value given is passed on as given, 0 too: the request's check refuses what is out of
          // range (`--ttl-ms 0` is an error, not the default).
          ...(opts.owner !== undefined ? { owner: opts.owner } : {}),
          ...(opts.ttlMs !== undefined ? { ttlMs: opts.ttlMs } : {}),
          ...(opts.fairness !== undefined ? { fairness: opts.fairness as 'FIFO' } : {}),
          ...(opts.maxHoldMs !== undefined ? { maxHoldMs: opts.maxHoldMs } : {}),
          ...(detached ? {} : { holderTtlMs }),
        };
        const pin =
          global.pin ??
          (process.env.LOCKWARDEN_PIN ? deploymentVersion(process.env.LOCKWARDEN_PIN) : undefined);
        const placement = { taskQueue: global.taskQueue, uiBaseUrl: global.ui, pinTo: pin };
        if (!opts.wait) {
          const session = await startAcquisition(client, request, placement);
          return { workflowId: session.workflowId, ui: session.uiUrl, releaseKey: session.releaseKey };
        }
        // The wait rides in with the start (update-with-start). Progress goes to stderr (a terminal
        // line rewritten in place), the answer to stdout.
        const { session, news } = await startAwaitingLease(client, request, placement);
        console.error(`waiting for ${key} as ${opts.requester}: ${session.uiUrl}`);
        const quiet = { write: () => true, isTTY: false };
        const answer = await awaitLeaseShowingProgress(
          client,
          session.workflowId,
          opts.quiet ? quiet : process.stderr,
          undefined,
          news,
        );
        if (answer.status === 'ended') throw new LockNotAcquiredError(key, answer.outcome);
        // The release key is this lease's release capability: whoever should release it needs it.
        const held = {
          lease: answer.lease,
          workflowId: session.workflowId,
          ui: session.uiUrl,
          releaseKey: session.releaseKey,
        };
        if (detached) return held;
        // A command's output is its own: the lease goes to stdout only when lockctl holds by itself.
        if (command.length === 0) console.log(printable(JSON.stringify(held)));
        const mode: HoldMode =
          command.length > 0
            ? { kind: 'command', argv: command }
            : opts.holdFor !== undefined
              ? { kind: 'for', ms: opts.holdFor }
              : { kind: 'until-interrupted' };
        const say = (line: string) => console.error(printable(line));
        process.exitCode = await holdThenRelease(client, held, holderTtlMs, mode, say);
        return undefined;
      },
    ),
  );

// `--hold-for 90s`: a whole number of ms, s, m or h (ms when no unit is given).
function holdDuration(value: string): number {
  const match = /^(\d+)(ms|s|m|h)?$/.exec(value);
  if (!match)
    throw new InvalidArgumentError(`expected a duration such as 1500ms, 90s, 5m or 2h, got "${value}"`);
  const unitMs = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[(match[2] ?? 'ms') as 'ms'];
  return Number(match[1]) * unitMs;
}

program
  .command('release')
  .description("ask a holding session to release its lease (fenced by the session's token)")
  .argument('<key>', 'lock key')
  .requiredOption('--holder <id>', 'the requester holding it')
  .option(
    '--release-key <key>',
    'the release key `lockctl acquire` printed (default: $LOCKWARDEN_RELEASE_KEY)',
    process.env.LOCKWARDEN_RELEASE_KEY,
  )
  .action(
    withClient(async (client, _g, key: string, opts: { holder: string; releaseKey?: string }) =>
      // Without the key, release() refuses with LeaseActionDenied once the names are checked.
      release(client, { key, holder: opts.holder }, opts.releaseKey ? { releaseKey: opts.releaseKey } : {}),
    ),
  );

program
  .command('force-release')
  .description(
    "take a lease away from its holder (an operator's act), fenced by its token; logged and counted",
  )
  .argument('<key>', 'lock key')
  .requiredOption('--holder <id>', 'the holder the lease was granted to')
  .requiredOption('--token <digits>', 'the fencing token the lock service issued')
  .requiredOption('--reason <text>', 'why the lease is taken away (logged with the release)')
  .action(
    withClient(async (client, global, key: string, opts: { holder: string; token: string; reason: string }) =>
      forceRelease(
        client,
        { key, holder: opts.holder, token: opts.token },
        { reason: opts.reason },
        { taskQueue: global.taskQueue },
      ),
    ),
  );

program
  .command('resolve')
  .description('answer an escalated session')
  .argument('<workflowId>', 'the session, e.g. lock/<key>/<requester>')
  .requiredOption('--action <retry|abandon>', 'retry with more budget, or abandon')
  .requiredOption('--operator <name>', 'who decides')
  .requiredOption('--reason <text>', 'why')
  .option('--extra-retries <n>', 'retries granted (retry)', wholeNumber)
  .option('--extra-wait-ms <ms>', 'wait granted (retry)', wholeNumber)
  .action(
    withClient(
      async (
        client,
        _g,
        workflowId: string,
        opts: {
          action: string;
          operator: string;
          reason: string;
          extraRetries?: number;
          extraWaitMs?: number;
        },
      ) => {
        const extra = Object.fromEntries(
          Object.entries({ extraRetries: opts.extraRetries, extraWaitMs: opts.extraWaitMs }).filter(
            ([, v]) => v !== undefined,
          ),
        );
        const applied = await resolve(client, workflowId, {
          action: opts.action as 'retry',
          operator: opts.operator,
          reason: opts.reason,
          ...extra,
        });
        return { resolved: workflowId, applied };
      },
    ),
  );

program
  .command('state')
  .description("show a session's state")
  .argument('<workflowId>', 'the session, e.g. lock/<key>/<requester>')
  .action(
    withClient(async (client, _g, workflowId: string) => {
      const state = await stateOf(client, workflowId);
      // The operators' kill switch, beside the state it explains (decisions by the policy).
      const model = await modelSwitchStatus(client);
      return model.model === 'off' ? { ...state, modelSwitch: model } : state;
    }),
  );

program
  .command('model')
  .description(
    'turn model decisions and drafts off or on for every worker of the namespace (a kill switch outside the model path), or show it',
  )
  .argument('<action>', 'off, on or status')
  .option('--operator <name>', 'who flips the switch (required for off and on)')
  .option('--reason <text>', 'why (required for off and on)')
  .action(
    withClient(async (client, global, action: string, opts: { operator?: string; reason?: string }) => {
      const change = { operator: opts.operator ?? '', reason: opts.reason ?? '' };
      if (action === 'status') return modelSwitchStatus(client);
      if (action === 'off') return switchModelOff(client, change, global.taskQueue);
      if (action === 'on') return switchModelOn(client, change);
      throw new InvalidLockRequestError('lockctl model', [
        `action: is ${JSON.stringify(action)}; use off, on or status`,
      ]);
    }),
  );

program
  .command('list')
  .description(
    "list sessions from Temporal's visibility, newest first, with each one's attempts, wait and holder",
  )
  .option('--key <key>', 'only sessions on this key')
  .option('--state <state>', `only sessions in this state (${SESSION_PHASES.join(', ')})`)
  .option('--requester <id>', "only this requester's sessions")
  .option('--limit <n>', 'at most this many sessions', wholeNumber, 50)
  .option('--json', 'one JSON array, for scripts')
  .action(
    withClient(
      async (
        client,
        global,
        opts: { key?: string; state?: string; requester?: string; limit: number; json?: boolean },
      ) => {
        const { json, ...filter } = opts;
        const rows = await listSessions(client, filter as Parameters<typeof listSessions>[1], global.ui);
        if (json) return rows;
        process.stdout.write(
          table(
            ['KEY', 'REQUESTER', 'STATE', 'ATTEMPTS', 'WAITED', 'HOLDER', 'OWNER', 'UI'],
            rows.map((r) => [
              r.key,
              r.requester,
              r.status === 'RUNNING' ? r.state : `${r.state} (${r.status.toLowerCase()})`,
              r.attempts === null ? '?' : String(r.attempts),
              duration(r.waitedMs),
              r.holder ?? '—',
              r.owner ?? '—',
              r.uiUrl,
            ]),
          ),
        );
        if (rows.length === 0) console.error('no sessions match');
        const model = await modelSwitchStatus(client);
        if (model.model === 'off')
          console.error(
            `model decisions and drafts are off (lockctl model off by ${model.operator} since ${model.since}: ${model.reason}); the policy decides`,
          );
      },
    ),
  );

program
  .command('status')
  .description("a key's holder, token, lease time left and queue, read from the lock service on its clock")
  .argument('<key>', 'lock key')
  .option('--json', 'JSON, for scripts')
  .action(
    withClient(async (client, global, key: string, opts: { json?: boolean }) => {
      const status = await statusOf(client, key, { taskQueue: global.taskQueue }).catch((error: unknown) => {
        // A read-only key may not start the workflow that reads the lock service: the sessions say instead.
        if (isDeniedByTemporal(error)) return null;
        throw error;
      });
      if (!status) return statusFromSessions(client, key, global.ui, opts.json ?? false);
      if (opts.json) return status;
      const clock = new Date(status.serviceTime).toISOString();
      const lines = [`${status.key} on ${status.backend} (service clock ${clock})`];
      lines.push(
        status.holder
          ? `held by ${status.holder} with token ${status.token}, lease left ${duration(status.leaseLeftMs)}`
          : 'free',
      );
      lines.push(`newest token issued: ${status.lastToken ?? 'none yet'}`);
      process.stdout.write(lines.map(printable).join('\n') + '\n');
      if (status.queue.length === 0) {
        console.log('queue: empty');
        return;
      }
      process.stdout.write(
        table(
          ['PLACE', 'WAITER', 'PRIORITY', 'WAITING', 'TICKET LEFT'],
          status.queue.map((w) => [
            String(w.place),
            w.requester,
            String(w.priority),
            duration(w.waitingMs),
            duration(w.ticketLeftMs),
          ]),
        ),
      );
    }),
  );

program
  .command('postmortem')
  .description(
    "write a post-mortem briefing from a key's sessions (Thread A / Thread B timeline, evidence, gates)",
  )
  .argument('<key>', 'lock key')
  .option('--since <iso>', 'first session start to include')
  .option('--until <iso>', 'last session start to include')
  .option('--firm <name>', 'advisory firm signing the briefing')
  .option('--stakeholder <name>', "client's engineering lead it is for")
  .option('--job <name>', 'impacted workflow or job (default: the key)')
  .option(
    '--evidence <[label=]file>',
    'JSON: a jest report (jest --json), or the report a bench, the fault campaign or the test runner writes (bench/results/*.json, evidence.json, .data/test-summary.json); repeat it, labelled before=… and after=…, to compare',
    (value: string, previous: string[] = []) => [...previous, value],
  )
  .option(
    '--patch <range|file>',
    'what the patch is: a commit range read with git (a1b2c3..d4e5f6), or a file',
  )
  .option('--owner <name>', 'who at the firm owns the follow-up')
  .option('--gates <file>', 'YAML or JSON: canaryPercent, soakMinutes, abort thresholds')
  .option('--escalations <file>', 'the escalation store (JSON lines) to add records from')
  .option(
    '--fenced <url>',
    "a fenced resource's database (sqlite:<file> or postgres://…) to read writes from",
  )
  .option('--resource <name>', 'the fenced resource whose writes to read (with --fenced)')
  .option('--format <text|md|eml>', 'output format', 'text')
  .option('--out <file>', 'write the briefing here instead of stdout')
  .option(
    '--model-task-queue <queue>',
    "the model worker's task queue, where the draft is made (default: LOCKWARDEN_MODEL_TASK_QUEUE; none: the lock worker)",
  )
  .action(
    withClient(
      async (
        client,
        global,
        key: string,
        opts: PostmortemOptions & {
          escalations?: string;
          fenced?: string;
          resource?: string;
          modelTaskQueue?: string;
        },
      ) => {
        const { escalations, fenced, resource, modelTaskQueue, ...options } = opts;
        if (Boolean(fenced) !== Boolean(resource))
          throw new InvalidLockRequestError('postmortem options', ['--fenced and --resource go together']);
        const written = await writePostmortem(client, key, options, {
          taskQueue: global.taskQueue,
          modelTaskQueue: modelTaskQueue ?? (process.env.LOCKWARDEN_MODEL_TASK_QUEUE || undefined),
          escalations: escalations ? new FileEscalationStore(escalations) : undefined,
          writes: fenced && resource ? await readFencedWrites(fenced, resource) : undefined,
        });
        if (!options.out) process.stdout.write(written.output);
        const lane =
          written.result.lane +
          (written.result.fallbackCause ? ` (fell back: ${written.result.fallbackCause})` : '');
        console.error(
          `${written.words} words, written by the ${lane}${options.out ? `, to ${options.out}` : ''}`,
        );
      },
    ),
  );

program.parseAsync().catch((error: unknown) => {
  // A session that refused an operator's answer says why in the update's cause.
  const refused = error instanceof WorkflowUpdateFailedError;
  const invalid =
    refused || isInvalidLockRequest(error) || isInvalidConfiguration(error) || error instanceof ZodError;
  console.error(
    error instanceof ZodError
      ? `invalid input: ${describeIssues(error).join('; ')}`
      : refused
        ? (error.cause?.message ?? error.message)
        : error instanceof Error
          ? error.message
          : String(error),
  );
  process.exit(
    invalid
      ? EXIT.invalidInput
      : isLockNotAcquired(error)
        ? notAcquiredExit(error)
        : error instanceof PermissionDeniedError
          ? EXIT.permissionDenied
          : EXIT.failed,
  );
});

function notAcquiredExit(error: LockNotAcquiredError): number {
  if (error.outcome.status === 'abandoned') return EXIT.abandoned;
  if (error.outcome.status === 'halted') return EXIT.halted;
  return EXIT.notAcquired;
}
