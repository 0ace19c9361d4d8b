"""JupyterLab as ``make lab`` starts it: ``jupyter lab --config=<this file>``.

The learner lands on chapter 1, the file browser shows the chapters and not
the files of the book's site that share their folder, and JupyterLab asks
nothing about news or updates.  Paths are taken from this file's place in
the checkout, so it works from any folder; nothing is written outside it.
The user's own JupyterLab settings (``~/.jupyter/lab/user-settings``) still
win over the defaults set here.
"""

from pathlib import Path

HERE = Path(__file__).resolve().parent
CHAPTERS = HERE.parent / "chapters"
FIRST_CHAPTER = "01_ndarray.ipynb"

c = get_config()  # noqa: F821  (traitlets defines it when it runs this file)

c.ServerApp.root_dir = str(CHAPTERS)
# the page the server opens in the browser and prints the URL of
c.LabApp.default_url = f"/lab/tree/{FIRST_CHAPTER}"

# The site's sources in chapters/ (see chapters/conf.py): Sphinx needs its
# Markdown pages in its source folder, and the notebooks, nbval and the
# notebooks' relative paths need the chapters there, so the two share it.
# They are hidden from the file browser's listings, not moved; every page of
# the site that is not a chapter is a Markdown file.
c.ContentsManager.hide_globs.extend(["conf.py", "_static", "*.md"])

# No news feed, no update check: not on the server, which would fetch them
# from the internet, and not in the page, which would first ask whether to
# (settings/overrides.json: the defaults of JupyterLab's settings).
c.LabApp.news_url = None
c.LabApp.check_for_updates_class = "jupyterlab.handlers.announcements.NeverCheckForUpdate"
c.LabApp.app_settings_dir = str(HERE / "settings")
