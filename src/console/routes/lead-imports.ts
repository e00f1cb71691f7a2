import type { Request, RequestHandler, Response, Router } from 'express';
import multer from 'multer';
import type { AppContext } from '../../context.js';
import type { ImportJob, ImportSwitches } from '../../lead-imports/repository.js';
import {
  cancelImport,
  createImport,
  DEFAULT_SWITCHES,
  delimiterName,
  describeColumns,
  mappingOf,
  previewImport,
  showImport,
  startImport,
  importResults,
  IMPORT_FIELDS,
  IMPORT_MAX_BYTES,
  IMPORT_MAX_ROWS,
} from '../../lead-imports/service.js';
import { ConsoleError } from '../errors.js';
import { signedIn } from '../session.js';
import { render } from '../views.js';
import { checked, pathId, text } from './form.js';

// The Leads page's CSV import: upload, mapping with a preview, the job's progress and results.

const upload = multer({ storage: multer.memoryStorage(), limits: { fileSize: IMPORT_MAX_BYTES, files: 1, fields: 10, fieldSize: 4096 } });

/**
 * Reads the upload form (multipart) before the session's CSRF check, which needs its `_csrf`
 * field; a file over the limit is a 413 page, and no file is kept anywhere but in memory.
 */
export const importUpload: RequestHandler = (req, res, next) => {
  if (req.method !== 'POST' || req.path !== '/leads/import') return next();
  upload.single('file')(req, res, (error: unknown) => {
    if (!error) return next();
    const code = (error as { code?: string }).code;
    next(
      code === 'LIMIT_FILE_SIZE'
        ? new ConsoleError(413, `The file is larger than ${IMPORT_MAX_BYTES / 1024 / 1024} MB; split it into smaller files.`)
        : new ConsoleError(400, 'That upload could not be read; choose a CSV file and send it again.'),
    );
  });
};

const ON_DUPLICATE = ['update', 'skip', 'error'] as const;

function switchesOf(body: unknown): ImportSwitches {
  const onDuplicate = text(body, 'on_duplicate');
  return {
    on_duplicate: (ON_DUPLICATE as readonly string[]).includes(onDuplicate) ? (onDuplicate as ImportSwitches['on_duplicate']) : 'update',
    create_missing_tags: checked(body, 'create_missing_tags'),
    enrich: checked(body, 'enrich'),
    tags: text(body, 'tags')
      .split(',')
      .map((tag) => tag.trim())
      .filter(Boolean)
      .slice(0, 10),
  };
}

async function renderMapping(
  res: Response,
  ctx: AppContext,
  job: ImportJob,
  form: { mapping?: string[]; switches?: ImportSwitches; preview?: unknown; error?: string },
  status = 200,
) {
  const columns = await describeColumns(ctx.db, job);
  render(
    res,
    'import-mapping',
    {
      title: `Map ${job.file_name}`,
      page: 'leads',
      job,
      delimiter: delimiterName(job),
      columns: columns.map((column, index) => ({ ...column, chosen: form.mapping?.[index] ?? column.guess })),
      fields: IMPORT_FIELDS,
      switches: form.switches ?? DEFAULT_SWITCHES,
      preview: form.preview ?? null,
      error: form.error ?? null,
    },
    status,
  );
}

const jobOf = (req: Request, res: Response, ctx: AppContext) => showImport(ctx.db, signedIn(res).user.workspaceId, pathId(req.params.id));

export function addLeadImportRoutes(router: Router, ctx: AppContext): void {
  router.get('/leads/import', (_req, res) => {
    render(res, 'import-upload', { title: 'Import CSV', page: 'leads', maxRows: IMPORT_MAX_ROWS, maxMegabytes: IMPORT_MAX_BYTES / 1024 / 1024 });
  });

  router.post('/leads/import', async (req, res) => {
    const file = (req as Request & { file?: { buffer: Buffer; originalname: string } }).file;
    if (!file) throw new ConsoleError(400, 'Choose a CSV file to upload.');
    const { workspaceId, userId } = signedIn(res).user;
    const job = await createImport(ctx.db, workspaceId, userId, file.originalname, file.buffer);
    res.redirect(303, `/console/leads/import/${job.id}`);
  });

  router.get('/leads/import/:id', async (req, res) => {
    const job = await jobOf(req, res, ctx);
    if (job.status === 'mapping') return renderMapping(res, ctx, job, {});
    const running = job.status === 'queued' || job.status === 'running';
    render(res, 'import-job', { title: `Import ${job.file_name}`, page: 'leads', job, delimiter: delimiterName(job), refreshSeconds: running ? 2 : null, running });
  });

  router.post('/leads/import/:id', async (req, res) => {
    const job = await jobOf(req, res, ctx);
    const mapping = mappingOf(
      job,
      job.columns.map((_, index) => text(req.body, `map-${index}`) || undefined),
    );
    const switches = switchesOf(req.body);
    try {
      if (text(req.body, 'action') === 'start') {
        await startImport(ctx.db, job, mapping, switches);
        return res.redirect(303, `/console/leads/import/${job.id}`);
      }
      const preview = await previewImport(ctx.writeGroups, ctx.db, job, mapping, switches);
      await renderMapping(res, ctx, job, { mapping, switches, preview });
    } catch (error) {
      if (!(error instanceof Error) || (error as { code?: string }).code !== 'invalid_argument') throw error;
      await renderMapping(res, ctx, job, { mapping, switches, error: error.message }, 400);
    }
  });

  router.post('/leads/import/:id/cancel', async (req, res) => {
    const job = await jobOf(req, res, ctx);
    await cancelImport(ctx.db, job.workspace_id, job.id);
    res.redirect(303, `/console/leads/import/${job.id}`);
  });

  router.get('/leads/import/:id/results.csv', async (req, res) => {
    const job = await jobOf(req, res, ctx);
    res.type('text/csv; charset=utf-8').attachment(`import-${job.id}-results.csv`);
    for await (const chunk of importResults(ctx.db, job)) if (!res.write(chunk)) await new Promise((resolve) => res.once('drain', resolve));
    res.end();
  });
}
