import { OPERATOR } from '../../audit/service.js';
import type { Command } from 'commander';
import { erasePerson, type PersonSelector } from '../../erasure/service.js';
import { exportPerson } from '../../person-export/service.js';
import { requireWorkspace } from '../../workspaces/service.js';
import { nonEmpty, positiveId } from '../../input.js';
import { exactlyOne } from '../arguments.js';
import { runCommand } from '../cli-context.js';
import { group } from './workspace-admin.js';

// A person's data on request: `lead erase` (GDPR Art. 17, with `--suppress` the person is
// refused from then on) and `lead export` (Art. 15), the services the console's lead page uses too.

interface PersonOptions {
  workspace: string;
  id?: string;
  email?: string;
  phone?: string;
  linkedinUrl?: string;
}

const PERSON_FLAGS = { id: '--id', email: '--email', phone: '--phone', linkedinUrl: '--linkedin-url' } as const;

function personSelector(options: PersonOptions): PersonSelector {
  const [flag, value] = exactlyOne(options, PERSON_FLAGS);
  if (flag === 'id') return { id: positiveId(value, '--id') };
  const text = nonEmpty(value, PERSON_FLAGS[flag], 2048);
  return flag === 'email' ? { email: text } : flag === 'phone' ? { phone: text } : { linkedinUrl: text };
}

const personOptions = (command: Command) =>
  command.requiredOption('--workspace <id>').option('--id <id>', 'the lead id').option('--email <address>').option('--phone <number>').option('--linkedin-url <url>');

export function registerPersonalDataCommands(program: Command): void {
  const lead = group(program, 'lead');
  personOptions(lead.command('erase').description('removes the person and every copy of their data; tells every receiver (lead_erased)'))
    .option('--suppress', 'keep a keyed hash of their contact details and refuse them from now on')
    .action((options: PersonOptions & { suppress?: boolean }) =>
      runCommand(async ({ db }) => {
        const person = personSelector(options);
        const workspace = await requireWorkspace(db, positiveId(options.workspace, '--workspace'));
        return erasePerson(db, { workspaceId: workspace.id, person, suppress: options.suppress === true, actor: OPERATOR });
      }),
    );
  personOptions(lead.command('export').description('one JSON document of everything stored about the person')).action((options: PersonOptions) =>
    runCommand(async ({ db }) => {
      const person = personSelector(options);
      const workspace = await requireWorkspace(db, positiveId(options.workspace, '--workspace'));
      return exportPerson(db, { workspaceId: workspace.id, person, actor: OPERATOR });
    }),
  );
}
