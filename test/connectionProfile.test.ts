// Temporal connection profiles as the `temporal` CLI reads them (@temporalio/envconfig): flags over
// TEMPORAL_* variables over the TOML profile; every bad setting named at start, no secret printed.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeTestPki } from '../devkit/certificates';
import { loadTemporalTarget } from '../temporal/connectionProfile';

const API_KEY = 'tmprl-secret-api-key-0123456789';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lw-profile-'));
const pki = makeTestPki(path.join(os.tmpdir(), 'lockwarden-test-pki'));
const file = (name: string, text: string) => {
  const at = path.join(dir, name);
  fs.writeFileSync(at, text);
  return at;
};
const config = file(
  'temporal.toml',
  `[profile.default]
address = "127.0.0.1:7233"

[profile.prod]
address = "prod.tmprl.example:7233"
namespace = "payments"
api_key = "${API_KEY}"

[profile.prod.tls]
server_name = "prod.tmprl.example"
server_ca_cert_path = "${pki.ca.cert}"
client_cert_path = "${pki.client.cert}"
client_key_path = "${pki.client.key}"

[profile.prod.grpc_meta]
x-tenant = "acme"
`,
);

describe('Temporal connection profiles', () => {
  it('loads a profile from the file, with TLS, a client certificate, an API key and gRPC metadata', () => {
    const target = loadTemporalTarget({ env: { TEMPORAL_CONFIG_FILE: config, TEMPORAL_PROFILE: 'prod' } });
    expect(target.namespace).toBe('payments');
    expect(target.connectionOptions).toMatchObject({
      address: 'prod.tmprl.example:7233',
      apiKey: API_KEY,
      metadata: { 'x-tenant': 'acme' },
      tls: { serverNameOverride: 'prod.tmprl.example', clientCertPair: expect.anything() },
    });
    // What may be logged says what is set, never its value.
    expect(target.summary).toEqual({
      address: 'prod.tmprl.example:7233',
      namespace: 'payments',
      profile: 'prod',
      tls: true,
      clientCertificate: true,
      usesApiKey: true,
      grpcMetadata: ['x-tenant'],
    });
    expect(JSON.stringify(target.summary)).not.toContain(API_KEY);
  });

  it('ranks the command line over the variables over the profile, as the CLI does', () => {
    const env = { TEMPORAL_CONFIG_FILE: config, TEMPORAL_PROFILE: 'prod', TEMPORAL_NAMESPACE: 'from-env' };
    expect(loadTemporalTarget({ env }).namespace).toBe('from-env');
    expect(loadTemporalTarget({ env, namespace: 'from-flag' }).namespace).toBe('from-flag');
    expect(
      loadTemporalTarget({ env: { ...env, TEMPORAL_ADDRESS: 'env.example:7233' } }).summary.address,
    ).toBe('env.example:7233');
    expect(loadTemporalTarget({ env, profile: 'default' }).summary).toMatchObject({
      address: '127.0.0.1:7233',
      tls: false,
      usesApiKey: false,
    });
    // An API key alone turns TLS on (Temporal Cloud's endpoints); TEMPORAL_TLS=false turns it off.
    expect(loadTemporalTarget({ env: { TEMPORAL_API_KEY: API_KEY } }).summary.tls).toBe(true);
    expect(
      loadTemporalTarget({ env: { TEMPORAL_API_KEY: API_KEY, TEMPORAL_TLS: 'false' } }).summary.tls,
    ).toBe(false);
  });

  it('defaults to the local dev server when nothing is set', () => {
    const target = loadTemporalTarget({ env: { TEMPORAL_CONFIG_FILE: file('empty.toml', '') } });
    expect(target.connectionOptions).toEqual({ address: '127.0.0.1:7233' });
    expect(target.namespace).toBe('default');
  });

  it.each([
    [
      'a config file that is not there',
      { env: { TEMPORAL_CONFIG_FILE: path.join(dir, 'none.toml') } },
      /TEMPORAL_CONFIG_FILE .*none\.toml.*cannot be read \(ENOENT\)/,
    ],
    [
      '--config-file that is not there',
      { configFile: path.join(dir, 'none.toml'), env: {} },
      /--config-file .*cannot be read/,
    ],
    [
      'a profile the file lacks',
      { env: { TEMPORAL_CONFIG_FILE: config, TEMPORAL_PROFILE: 'staging' } },
      /TEMPORAL_PROFILE: no profile "staging"/,
    ],
    [
      '--profile the file lacks',
      { profile: 'staging', env: { TEMPORAL_CONFIG_FILE: config } },
      /--profile: no profile "staging"/,
    ],
    [
      'a client certificate file that is not there',
      {
        env: {
          TEMPORAL_TLS_CLIENT_CERT_PATH: path.join(dir, 'no.pem'),
          TEMPORAL_TLS_CLIENT_KEY_PATH: pki.client.key,
        },
      },
      /TEMPORAL_TLS_CLIENT_CERT_PATH: cannot read .*no\.pem \(ENOENT\)/,
    ],
    [
      'a key that is not a key',
      {
        env: {
          TEMPORAL_TLS_CLIENT_CERT_PATH: pki.client.cert,
          TEMPORAL_TLS_CLIENT_KEY_PATH: pki.client.cert,
        },
      },
      /TEMPORAL_TLS_CLIENT_KEY_PATH: .* is not a PEM private key/,
    ],
    [
      'a CA that is not a certificate',
      { env: { TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.client.key } },
      /TEMPORAL_TLS_SERVER_CA_CERT_PATH: .* is not a PEM certificate/,
    ],
    [
      'a certificate without its key',
      { env: { TEMPORAL_TLS_CLIENT_CERT_PATH: pki.client.cert } },
      /TEMPORAL_TLS_CLIENT_KEY_PATH: a client certificate needs both/,
    ],
    [
      'an address without a port',
      { env: { TEMPORAL_ADDRESS: 'temporal.example' } },
      /TEMPORAL_ADDRESS.*must be host:port/,
    ],
  ])('refuses %s, naming the setting', (_what, options, message) => {
    expect(() => loadTemporalTarget(options)).toThrow(message);
  });

  it('names a bad profile key in the file by its profile and key', () => {
    const bad = file(
      'bad-key.toml',
      `[profile.default.tls]\nclient_cert_path = "${pki.client.cert}"\nclient_key_path = "${pki.client.cert}"\n`,
    );
    expect(() => loadTemporalTarget({ env: { TEMPORAL_CONFIG_FILE: bad } })).toThrow(
      /tls\.client_key_path \(profile "default"\): .* is not a PEM private key/,
    );
  });

  it('says where a file is not TOML without quoting the line, which may hold the API key', () => {
    const broken = file('broken.toml', `[profile.default]\napi_key = "${API_KEY}\n`);
    let message = '';
    try {
      loadTemporalTarget({ env: { TEMPORAL_CONFIG_FILE: broken } });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/TEMPORAL_CONFIG_FILE .*broken\.toml.*: not valid TOML at line 2/);
    expect(message).not.toContain(API_KEY);
  });
});
