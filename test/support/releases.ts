// Released workflow code, extracted from git by tag, and a worker that runs 0.1.0's as 0.1.0's did:
// what the upgrade and replay tests run as a released version.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  bundleWorkflowCode,
  type NativeConnection,
  Worker,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { type ActivityDeps, createActivities } from '../../activities';
import { renewFenced } from '../../activities/leaseActions';
import { createMetrics } from '../../activities/metrics';
import type { Lease } from '../../policy/lockContract/lockSchemas';
import type { WorkerDeployment } from '../../worker/config';
import { pinnedTo } from '../../worker/createWorker';
import { sessionLogSinks } from '../../worker/sessionLogSinks';
import { sessionMetricsSinks } from '../../worker/sessionMetricsSinks';
import { quietBundlerLogger } from '../../devkit/temporal';

const ROOT = path.join(__dirname, '..', '..');

/** A tagged release: its tag, and the commit the tag names for a clone that has no tags. */
export interface Release {
  tag: string;
  /** Recorded in a commit after the tag's own (a commit cannot name itself); tags are tried first. */
  commit?: string;
  buildId: string;
}

/** The 0.1.0 release. */
export const RELEASE_010: Release = {
  tag: 'v0.1.0',
  commit: 'f00872bb5dfbd86586d2899d34814bdd8e53413f',
  buildId: '0.1.0',
};

/** The 0.2.0 release. */
export const RELEASE_020: Release = {
  tag: 'v0.2.0',
  commit: 'd2b97595723f124048560efd92e5979ac3151951',
  buildId: '0.2.0',
};

/** Extracts a release's workflow code (and the modules it imports) from git into a temporary tree. */
export function checkOutRelease(release: Release): string {
  const rev = [release.tag, release.commit].find((r) => {
    if (!r) return false;
    try {
      execFileSync('git', ['rev-parse', '--verify', '--quiet', `${r}^{commit}`], {
        cwd: ROOT,
        stdio: 'ignore',
      });
      return true;
    } catch {
      return false;
    }
  });
  if (!rev)
    throw new Error(
      `neither ${release.tag} nor ${release.commit ?? 'its commit'} is in this clone: fetch tags or unshallow it`,
    );
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `lockwarden-${release.buildId}-`));
  const archive = execFileSync(
    'git',
    ['archive', rev, 'workflows', 'policy', 'temporal', 'activities', 'locks'],
    {
      cwd: ROOT,
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  execFileSync('tar', ['-x', '-C', dir], { input: archive });
  // The release's code resolves its packages (the SDK, zod) from this checkout's node_modules.
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  return dir;
}

/** A release's workflow bundle, built from a checkout of it; `dispose` removes the checkout. */
export async function releaseBundle(release: Release): Promise<{
  bundle: WorkflowBundleWithSourceMap;
  dispose: () => void;
}> {
  const dir = checkOutRelease(release);
  try {
    const bundle = await bundleWorkflowCode({
      workflowsPath: path.join(dir, 'workflows', 'index.ts'),
      logger: quietBundlerLogger,
    });
    return { bundle, dispose: () => fs.rmSync(dir, { recursive: true, force: true }) };
  } catch (error) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** What a 0.1.0 worker of the upgrade test runs on. */
export interface Release010WorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  workflowBundle: WorkflowBundleWithSourceMap;
  /** A version of a Worker Deployment, or null for an unversioned worker (as 0.1.0's own was). */
  deployment: WorkerDeployment | null;
}

/**
 * A worker as 0.1.0 ran one: 0.1.0's workflow code, and its activities under 0.1.0's names. Today's
 * activities do what 0.1.0's did; two of 0.1.0's names are gone from them (`releaseLock`, now
 * `releaseFencedLease`; `renewLease`, the renewal 0.1.0's sessions made from the workflow, which the
 * lease keeper replaced), so they are registered here under their old names.
 */
export function release010Worker(options: Release010WorkerOptions): Promise<Worker> {
  const metrics = options.deps.metrics ?? createMetrics();
  const activities = createActivities({ ...options.deps, metrics });
  const { locks, log } = options.deps;
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    workflowBundle: options.workflowBundle,
    activities: {
      ...activities,
      releaseLock: activities.releaseFencedLease,
      renewLease: (lease: Lease) => renewFenced({ locks, log, metrics }, lease),
    },
    sinks: { ...sessionMetricsSinks(metrics), ...sessionLogSinks(log) },
    ...(options.deployment ? { workerDeploymentOptions: pinnedTo(options.deployment) } : {}),
  });
}
