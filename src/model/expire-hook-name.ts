/**
 * The name LEASEHOLD_EXPIRE_HOOK gives the application's hook:
 * `<schema>.<function>`, both lowercase SQL identifiers (as LEASEHOLD_SCHEMA
 * is), so it can be quoted and called without splicing in what was typed
 * (holds/expire-hook.ts). Pure, for the configuration and the lane alike.
 */
export const HOOK_NAME = /^([a-z_][a-z0-9_]{0,62})\.([a-z_][a-z0-9_]{0,62})$/;
export const HOOK_NAME_RULE = 'must be <schema>.<function>, both lowercase SQL identifiers (letters, digits, underscore), e.g. app.release_slots';
