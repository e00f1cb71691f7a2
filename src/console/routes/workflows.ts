import type { Router } from 'express';
import type { AppContext } from '../../context.js';

export function addWorkflowRoutes(_router: Router, _ctx: AppContext): void {}
