// Worker Deployment names and Build IDs, as Temporal accepts them.
import { z } from 'zod';

/**
 * A Worker Deployment's name: Temporal joins it to a Build ID with a colon (and, in older APIs, a
 * dot), so it may hold neither, nor white space.
 */
export const deploymentNameSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^.:\s]+$/, 'no dots, colons or spaces');

/** A Build ID, such as the package version `0.2.0`: no colon and no white space. */
export const buildIdSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^:\s]+$/, 'no colons or spaces');

/** A Worker Deployment Version: the deployment's name and one build's id. */
export interface DeploymentVersion {
  deploymentName: string;
  buildId: string;
}

/** Reads `<deployment>:<build id>` (as Temporal's UI and visibility write it); null with why not. */
export function parseDeploymentVersion(
  text: string,
): { ok: true; version: DeploymentVersion } | { ok: false; problem: string } {
  const [name, buildId, ...rest] = text.split(':');
  if (buildId === undefined || rest.length > 0)
    return { ok: false, problem: `expected <deployment>:<build id>, got ${JSON.stringify(text)}` };
  for (const [what, part, schema] of [
    ['deployment', name, deploymentNameSchema],
    ['build id', buildId, buildIdSchema],
  ] as const) {
    const parsed = schema.safeParse(part);
    if (!parsed.success)
      return { ok: false, problem: `${what}: ${parsed.error.issues.map((i) => i.message).join('; ')}` };
  }
  return { ok: true, version: { deploymentName: name!, buildId } };
}
