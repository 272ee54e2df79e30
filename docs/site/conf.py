# Sphinx configuration of the collection's documentation site (make docs; tests/docs-site.sh). The plugin and role
# pages come from antsibull-docs; the guides are docs/*.md, read by MyST.
project = "accelops.gpu"
copyright = "accelops.gpu contributors"
html_title = "accelops.gpu documentation"
html_short_title = "accelops.gpu"

extensions = ["sphinx.ext.intersphinx", "sphinx_antsibull_ext", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
myst_heading_anchors = 3

pygments_style = "ansible"
highlight_language = "YAML+Jinja"

html_theme = "sphinx_ansible_theme"
html_theme_options = {"display_version": False}
html_show_sphinx = False
html_use_index = False
html_copy_source = False

# Offline: the inventory is a local file that tests/docs-site.sh writes from ansible_devel.txt, never fetched.
import os  # noqa: E402

intersphinx_mapping = {
    "ansible_devel": (
        "https://docs.ansible.com/projects/ansible/devel/",
        (os.path.join(os.environ["DOCS_SITE_INVENTORIES"], "ansible_devel.inv"),),
    ),
}

default_role = "any"
nitpicky = True
