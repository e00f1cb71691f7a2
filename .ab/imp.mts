for (const m of ['cli', 'receiver', 'private-postgres', 'metrics', 'service', 'ports']) { await import(`../test/support/${m}.ts`); console.log('ok', m); }
