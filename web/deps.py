"""Dependency aliases shared by the routers."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.templating import Jinja2Templates

from engine.detector import Detector
from web.settings import Settings


def get_detector(request: Request) -> Detector:
    detector: Detector = request.app.state.detector
    return detector


def get_app_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_templates(request: Request) -> Jinja2Templates:
    templates: Jinja2Templates = request.app.state.templates
    return templates


DetectorDep = Annotated[Detector, Depends(get_detector)]
SettingsDep = Annotated[Settings, Depends(get_app_settings)]
TemplatesDep = Annotated[Jinja2Templates, Depends(get_templates)]
