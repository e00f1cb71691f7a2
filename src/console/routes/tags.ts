import type { Router } from 'express';
import type { AppContext } from '../../context.js';

export function addTagRoutes(_router: Router, _ctx: AppContext): void {}
