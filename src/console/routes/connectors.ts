import type { Router } from 'express';
import type { AppContext } from '../../context.js';

export function addConnectorRoutes(_router: Router, _ctx: AppContext): void {}
