import { Module } from '@nestjs/common';
import { TaskDatabase } from './task-database.js';
import { TaskController } from './task.controller.js';
import { TaskRepository } from './task.repository.js';
import { TaskRunner } from './task.runner.js';

/** Tasks: work on many callbacks at once, in chunks, resumable (task.sql.ts). */
@Module({
  controllers: [TaskController],
  providers: [TaskDatabase, TaskRepository, TaskRunner],
  exports: [TaskRepository, TaskRunner],
})
export class TasksModule {}
