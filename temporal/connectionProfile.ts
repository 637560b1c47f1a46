// Where lockwarden reaches Temporal: a connection profile loaded as Temporal's CLI and SDKs load it
// (@temporalio/envconfig: flags over TEMPORAL_* variables over a TOML profile), checked at start.
import fs from 'node:fs';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import {
  type ClientConfigProfile,
  type ConfigDataSource,
  loadClientConfigProfile,
  toClientOptions,
} from '@temporalio/envconfig';
import type { TLSConfig } from '@temporalio/client';
import { DEFAULT_NAMESPACE, DEFAULT_TEMPORAL_ADDRESS } from '../policy/constants';
import { InvalidConfigurationError } from '../policy/errors';

/** Which profile to load, and the command line's settings that override it (as the `temporal` CLI's do). */
export interface TemporalProfileOptions {
  /** `--profile`; else TEMPORAL_PROFILE; else "default". */
  profile?: string;
  /** `--config-file`; else TEMPORAL_CONFIG_FILE; else the CLI's own file (~/.config/temporalio/temporal.toml). */
  configFile?: string;
  /** `--address`: over TEMPORAL_ADDRESS and the profile. */
  address?: string;
  /** `--namespace`: over TEMPORAL_NAMESPACE and the profile. */
  namespace?: string;
  /** The environment to read; process.env when absent. */
  env?: NodeJS.ProcessEnv;
}

/** How to reach Temporal: the options both Connection.connect and NativeConnection.connect take. */
export interface TemporalTarget {
  connectionOptions: {
    address: string;
    tls?: TLSConfig | boolean;
    apiKey?: string;
    metadata?: Record<string, string>;
  };
  namespace: string;
  /** What may be logged of it: names and switches, never a key, a certificate or a header's value. */
  summary: {
    address: string;
    namespace: string;
    profile: string | null;
    tls: boolean;
    clientCertificate: boolean;
    usesApiKey: boolean;
    grpcMetadata: string[];
  };
}

const ADDRESS = /^[A-Za-z0-9.\-[\]:]+:\d{1,5}$/;
type TlsFile = 'clientCert' | 'clientKey' | 'serverCACert';
// Each TLS file's setting, as the environment and the profile's TOML name it.
const TLS_SETTINGS: Record<TlsFile, { env: string; toml: string }> = {
  clientCert: { env: 'TEMPORAL_TLS_CLIENT_CERT', toml: 'tls.client_cert' },
  clientKey: { env: 'TEMPORAL_TLS_CLIENT_KEY', toml: 'tls.client_key' },
  serverCACert: { env: 'TEMPORAL_TLS_SERVER_CA_CERT', toml: 'tls.server_ca_cert' },
};

/**
 * Loads the Temporal connection profile the way the `temporal` CLI does: command-line settings over
 * the TEMPORAL_* variables over the profile in the TOML file. A missing or unreadable file, a profile
 * that is not there, a certificate or key that does not parse, or a client certificate without its
 * key throws {@link InvalidConfigurationError} naming the setting; no message holds a secret.
 */
export function loadTemporalTarget(options: TemporalProfileOptions = {}): TemporalTarget {
  const env = options.env ?? process.env;
  const profileName = options.profile ?? nonEmpty(env.TEMPORAL_PROFILE);
  const explicitFile = options.configFile ?? nonEmpty(env.TEMPORAL_CONFIG_FILE);
  const fileSetting = options.configFile ? '--config-file' : 'TEMPORAL_CONFIG_FILE';
  if (explicitFile !== undefined) readableOrThrow(explicitFile, `${fileSetting} (${explicitFile})`);
  const profile = loadProfile(env, profileName, explicitFile, fileSetting);
  if (options.address !== undefined) profile.address = options.address;
  if (options.namespace !== undefined) profile.namespace = options.namespace;
  const where = (file: TlsFile) => settingOf(file, profile, env, profileName);
  checkProfile(profile, where);
  const connect = toClientOptions(profile);
  const address = profile.address ?? DEFAULT_TEMPORAL_ADDRESS;
  const namespace = profile.namespace ?? DEFAULT_NAMESPACE;
  const tls = connect.connectionOptions.tls ?? undefined;
  return {
    connectionOptions: {
      address,
      ...(tls !== undefined ? { tls } : {}),
      ...(profile.apiKey !== undefined ? { apiKey: profile.apiKey } : {}),
      ...(profile.grpcMeta && Object.keys(profile.grpcMeta).length ? { metadata: profile.grpcMeta } : {}),
    },
    namespace,
    summary: {
      address,
      namespace,
      profile: profileName ?? null,
      tls: tls !== undefined && tls !== false,
      clientCertificate: profile.tls?.clientCert !== undefined,
      usesApiKey: profile.apiKey !== undefined,
      grpcMetadata: Object.keys(profile.grpcMeta ?? {}).sort(),
    },
  };
}

function loadProfile(
  env: NodeJS.ProcessEnv,
  profileName: string | undefined,
  file: string | undefined,
  fileSetting: string,
): ClientConfigProfile {
  try {
    return loadClientConfigProfile({
      ...(profileName !== undefined ? { profile: profileName } : {}),
      ...(file !== undefined ? { configSource: { path: file } } : {}),
      configFileStrict: true,
      overrideEnvVars: definedOnly(env),
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // envconfig 1.24 throws a TypeError on a file with no [profile] table; the CLI reads it as empty.
    if (error instanceof TypeError && /reading '/.test(message)) {
      if (profileName === undefined)
        return loadClientConfigProfile({ disableFile: true, overrideEnvVars: definedOnly(env) });
      throw noProfile(profileName, env, file);
    }
    if (/^Profile '.*' not found/.test(message)) throw noProfile(profileName, env, file);
    // A TOML parser's message quotes the offending line, which may be an api_key: give its position only.
    const line = (error as { line?: number }).line;
    const what = file ? `${fileSetting} (${file})` : 'the Temporal config file';
    if (line !== undefined) throw new InvalidConfigurationError([`${what}: not valid TOML at line ${line}`]);
    if (message.startsWith('Validation error') || message.startsWith('Cannot specify both'))
      throw new InvalidConfigurationError([`${what}: ${message}`]);
    throw new InvalidConfigurationError([
      `${what}: cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    ]);
  }
}

function noProfile(profileName: string | undefined, env: NodeJS.ProcessEnv, file: string | undefined) {
  const setting = profileName === nonEmpty(env.TEMPORAL_PROFILE) ? 'TEMPORAL_PROFILE' : '--profile';
  return new InvalidConfigurationError([
    `${setting}: no profile "${profileName}" in ${file ?? 'the Temporal config file'}`,
  ]);
}

function checkProfile(profile: ClientConfigProfile, where: (file: TlsFile) => string): void {
  const problems: string[] = [];
  if (profile.address !== undefined && !ADDRESS.test(profile.address))
    problems.push(`TEMPORAL_ADDRESS / address: must be host:port, got "${profile.address}"`);
  if (profile.namespace !== undefined && profile.namespace.trim() === '')
    problems.push('TEMPORAL_NAMESPACE / namespace: must not be empty');
  if (profile.apiKey !== undefined && profile.apiKey.trim() === '')
    problems.push('TEMPORAL_API_KEY / api_key: is empty');
  const tls = profile.tls;
  if (tls && !tls.disabled) {
    if ((tls.clientCert === undefined) !== (tls.clientKey === undefined))
      problems.push(
        `${tls.clientCert ? where('clientKey') : where('clientCert')}: a client certificate needs both ` +
          'its certificate and its key',
      );
    for (const file of ['clientCert', 'clientKey', 'serverCACert'] as const) {
      const problem = tls[file] && pemProblem(tls[file], file === 'clientKey' ? 'key' : 'certificate');
      if (problem) problems.push(`${where(file)}: ${problem}`);
    }
  }
  if (problems.length) throw new InvalidConfigurationError(problems);
}

// Reads a certificate or key and says what is wrong with it, if anything; never its contents.
function pemProblem(source: ConfigDataSource, kind: 'key' | 'certificate'): string | null {
  let data: Buffer;
  try {
    data = 'path' in source ? fs.readFileSync(source.path) : Buffer.from(source.data);
  } catch (error) {
    return `cannot read ${'path' in source ? source.path : 'it'} (${(error as NodeJS.ErrnoException).code ?? 'error'})`;
  }
  try {
    if (kind === 'key') createPrivateKey(data);
    else new X509Certificate(data);
    return null;
  } catch {
    return `${'path' in source ? source.path : 'the data'} is not a PEM ${kind === 'key' ? 'private key' : 'certificate'}`;
  }
}

// The name a user set a TLS file under: the variable when it came from the environment, else the profile's key.
function settingOf(
  file: TlsFile,
  profile: ClientConfigProfile,
  env: NodeJS.ProcessEnv,
  profileName: string | undefined,
): string {
  const source = profile.tls?.[file];
  const { env: variable, toml } = TLS_SETTINGS[file];
  if (source && 'path' in source && env[`${variable}_PATH`] === source.path) return `${variable}_PATH`;
  if (source && 'data' in source && env[`${variable}_DATA`] !== undefined) return `${variable}_DATA`;
  // A file not set at all is named where its partner was set: in the environment, or in the profile.
  if (!source && Object.keys(env).some((name) => name.startsWith('TEMPORAL_TLS_CLIENT_')))
    return `${variable}_PATH`;
  return `${toml}_${source && 'data' in source ? 'data' : 'path'} (profile "${profileName ?? 'default'}")`;
}

function readableOrThrow(file: string, setting: string): void {
  try {
    fs.accessSync(file, fs.constants.R_OK);
  } catch (error) {
    throw new InvalidConfigurationError([
      `${setting}: cannot be read (${(error as NodeJS.ErrnoException).code})`,
    ]);
  }
}

// An empty variable counts as unset, as the worker's other settings do.
function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

function definedOnly(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined && e[1] !== ''),
  );
}
