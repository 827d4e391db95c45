import { parseAccounts } from '../model/accounts-file.js';
import { fromParsedAccounts, type AccountsInput, type AccountsSource } from './accounts.js';

/**
 * An accounts file (the same YAML as LEASEHOLD_ACCOUNTS_FILE) read for the
 * capacity model, through the same parser, so a bad file fails with the
 * same ConfigError naming the field (`--accounts-file: accounts[1].rate.unit:
 * must be requests or emails`).
 *
 * The model needs no secret: every `${VAR}` reference resolves to a
 * placeholder, so the file can be checked on a machine without the
 * credentials, and none are read from the environment.
 */

const PLACEHOLDER = '<not read by leasehold capacity>';
const placeholders: Readonly<Record<string, string | undefined>> = new Proxy(
  {},
  { get: (_target, key) => (typeof key === 'string' ? PLACEHOLDER : undefined) },
);

export function accountsFromText(
  text: string,
  source: Exclude<AccountsSource, 'flags'>,
  file: string,
  failoverAfterSeconds: number,
  notes: string[] = [],
): AccountsInput {
  return fromParsedAccounts(parseAccounts(text, placeholders, source), source, file, failoverAfterSeconds, notes);
}
