import { InvalidArgumentError } from 'commander';
import { isListenHost, isReservedSchemaName, LISTEN_HOST_MESSAGE } from '../../config-schema.js';
import { CliExit, EXIT_USAGE } from '../context.js';
import { ValidationError } from '../../errors.js';
import { PAUSE_REASON_RULE, validateBurst, validatePauseReason, validatePerSecond } from '../../model/delivery-policy.js';
import { validateHoldId } from '../../model/hold-input.js';
import { INTENT_ID_PATTERN } from '../../model/intent-states.js';

/**
 * Argument parsers for commander: a bad value is a usage error (exit 2, one
 * line naming what was wrong) before anything touches the database.
 */

export function holdIdArg(value: string): string {
  try {
    return validateHoldId(value, 'holdId');
  } catch (error) {
    throw new InvalidArgumentError((error as ValidationError).message);
  }
}

export function intentIdArg(value: string): string {
  if (!INTENT_ID_PATTERN.test(value)) {
    throw new InvalidArgumentError('must be an intent id such as reservation-expired:<holdId>');
  }
  return value;
}

/** A command-line number, checked by the same rule the API and library use. */
function numberArg(value: string, validate: (n: number) => number): number {
  try {
    return validate(value.trim() === '' ? Number.NaN : Number(value));
  } catch (error) {
    throw new InvalidArgumentError((error as ValidationError).message.replace(/^\w+: /, ''));
  }
}

export const perSecondArg = (value: string): number => numberArg(value, validatePerSecond);
export const burstArg = (value: string): number => numberArg(value, validateBurst);

export function secondsArg(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0 || n > 31_536_000) {
    throw new InvalidArgumentError('must be a number of seconds greater than 0');
  }
  return n;
}

export function reasonArg(value: string): string {
  try {
    return validatePauseReason(value);
  } catch {
    throw new InvalidArgumentError(PAUSE_REASON_RULE);
  }
}

/** --host: the same rule as LEASEHOLD_HOST. */
export function hostArg(value: string): string {
  if (!isListenHost(value)) throw new InvalidArgumentError(LISTEN_HOST_MESSAGE);
  return value;
}

/**
 * A schema a command drops and recreates (demo, drill): only ever one whose
 * name ends in the command's suffix, so a mistyped flag can never drop a
 * real deployment's schema. Exit 2 otherwise.
 */
export function droppableSchema(command: string, suffix: string, value: string): string {
  // 63 characters in all: the first, the rest, then _<suffix>.
  const maxStem = 63 - 1 - (suffix.length + 1);
  if (!new RegExp(`^[a-z_][a-z0-9_]{0,${maxStem}}_${suffix}$`).test(value) || isReservedSchemaName(value)) {
    throw new CliExit(
      EXIT_USAGE,
      `leasehold ${command}: --schema must be a lowercase SQL identifier ending in _${suffix}, not starting with pg_ (it is dropped and recreated)`,
    );
  }
  return value;
}
