import type { Router } from 'express';
import type { AppContext } from '../../context.js';

export function addDeliveryRoutes(_router: Router, _ctx: AppContext): void {}
