// The local runtime's header secrets: LOCAL_HEADER_SECRET_ARNS, the secrets (full ARNs, separated by
// commas or spaces) HTTP target headers may name, as the stack property `headerSecretArns` lists
// them in AWS. moto serves Secrets Manager: create a secret there and list its ARN here.
import { secretArnSchema } from '../../lambdas/domain/job';

export function localHeaderSecretArnsFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  const arns = (env.LOCAL_HEADER_SECRET_ARNS ?? '').split(/[\s,]+/).filter(Boolean);
  const wrong = arns.filter((arn) => !secretArnSchema.safeParse(arn).success);
  if (wrong.length > 0) throw new Error(`LOCAL_HEADER_SECRET_ARNS: not a Secrets Manager secret's full ARN: ${wrong.join(', ')}`);
  return arns;
}
